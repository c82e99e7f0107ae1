package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// BinDir holds the prometheus binary (EnsureTools with PrometheusTool).
	// Required.
	BinDir string
	// Dir holds the configuration, the TSDB and prometheus.log. Required.
	Dir string
	// ScrapeInterval is the global scrape and evaluation interval
	// (default 5s).
	ScrapeInterval time.Duration
	// Jobs are the scrape jobs.
	Jobs []ScrapeJob
	// StartTimeout bounds the wait for /-/ready (default 1 minute).
	StartTimeout time.Duration
}

// ScrapeJob is one scrape_configs entry with static targets.
type ScrapeJob struct {
	// Name is the job_name (and the series' job label).
	Name string
	// Targets are host:port addresses.
	Targets []string
	// Labels are target labels, attached to every series scraped, as
	// service discovery would attach them.
	Labels map[string]string
	// MetricsPath defaults to /metrics.
	MetricsPath string
	// HonorLabels keeps a scraped series' own labels when they clash with
	// target labels; when false (Prometheus's default) the series' labels
	// are renamed exported_<name>.
	HonorLabels bool
	// Relabel and MetricRelabel are relabel_configs and metric_relabel_configs.
	Relabel       []RelabelConfig
	MetricRelabel []RelabelConfig
}

// RelabelConfig is one Prometheus relabelling step.
type RelabelConfig struct {
	SourceLabels []string `json:"source_labels,omitempty"`
	Separator    string   `json:"separator,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	TargetLabel  string   `json:"target_label,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// Prometheus is a running Prometheus server on 127.0.0.1.
type Prometheus struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string
	// ConfigFile is the generated prometheus.yml.
	ConfigFile string
	*Process

	scrapeInterval time.Duration
}

// StartPrometheus writes a configuration for opts.Jobs and starts the
// pinned Prometheus on a free loopback port, waiting until it is ready. ctx
// bounds the start only; Stop ends the server.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	if opts.BinDir == "" || opts.Dir == "" {
		return nil, fmt.Errorf("localcluster: PrometheusOptions needs BinDir and Dir, got %q and %q", opts.BinDir, opts.Dir)
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = 5 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = time.Minute
	}
	p := &Prometheus{ConfigFile: filepath.Join(opts.Dir, "prometheus.yml"), scrapeInterval: opts.ScrapeInterval}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: prometheus: %w", err)
	}
	if err := p.writeConfig(opts.Jobs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	// The free port may be taken between the probe and Prometheus's listen:
	// try a few times.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		proc, err := StartProcess(ProcessOptions{
			Name: "prometheus",
			Path: filepath.Join(opts.BinDir, "prometheus"),
			Args: []string{
				"--config.file=" + p.ConfigFile,
				"--storage.tsdb.path=" + filepath.Join(opts.Dir, "data"),
				"--web.listen-address=" + addr,
				"--web.enable-lifecycle",
			},
			LogDir: opts.Dir,
		})
		if err != nil {
			return nil, err
		}
		p.URL, p.Process = "http://"+addr, proc
		if lastErr = proc.WaitHTTP(ctx, p.URL+"/-/ready"); lastErr == nil {
			return p, nil
		}
		_ = proc.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("localcluster: prometheus: %w", lastErr)
}

// ScrapeInterval is the configured scrape interval.
func (p *Prometheus) ScrapeInterval() time.Duration { return p.scrapeInterval }

// SetJobs replaces the scrape jobs and reloads the configuration.
func (p *Prometheus) SetJobs(ctx context.Context, jobs []ScrapeJob) error {
	if err := p.writeConfig(jobs); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("localcluster: prometheus reload: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("localcluster: prometheus reload: %s: %s", resp.Status, strings.TrimSpace(b.String()))
	}
	return nil
}

func (p *Prometheus) writeConfig(jobs []ScrapeJob) error {
	data, err := prometheusConfig(p.scrapeInterval, jobs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.ConfigFile, data, 0o644); err != nil {
		return fmt.Errorf("localcluster: prometheus: %w", err)
	}
	return nil
}

// prometheusConfig renders prometheus.yml.
func prometheusConfig(interval time.Duration, jobs []ScrapeJob) ([]byte, error) {
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName              string          `json:"job_name"`
		MetricsPath          string          `json:"metrics_path,omitempty"`
		HonorLabels          bool            `json:"honor_labels"`
		StaticConfigs        []staticConfig  `json:"static_configs"`
		RelabelConfigs       []RelabelConfig `json:"relabel_configs,omitempty"`
		MetricRelabelConfigs []RelabelConfig `json:"metric_relabel_configs,omitempty"`
	}
	type config struct {
		Global struct {
			ScrapeInterval     string `json:"scrape_interval"`
			EvaluationInterval string `json:"evaluation_interval"`
			ScrapeTimeout      string `json:"scrape_timeout"`
		} `json:"global"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	var c config
	c.Global.ScrapeInterval = promDuration(interval)
	c.Global.EvaluationInterval = promDuration(interval)
	// A scrape must end before the next starts.
	c.Global.ScrapeTimeout = promDuration(min(interval, 10*time.Second))
	seen := map[string]bool{}
	var problems []error
	for i, j := range jobs {
		switch {
		case j.Name == "":
			problems = append(problems, fmt.Errorf("Jobs[%d].Name: required", i))
		case seen[j.Name]:
			problems = append(problems, fmt.Errorf("Jobs[%d].Name: duplicate %q", i, j.Name))
		}
		seen[j.Name] = true
		if len(j.Targets) == 0 {
			problems = append(problems, fmt.Errorf("Jobs[%d].Targets: at least one host:port required", i))
		}
		c.ScrapeConfigs = append(c.ScrapeConfigs, scrapeConfig{
			JobName:              j.Name,
			MetricsPath:          j.MetricsPath,
			HonorLabels:          j.HonorLabels,
			StaticConfigs:        []staticConfig{{Targets: j.Targets, Labels: j.Labels}},
			RelabelConfigs:       j.Relabel,
			MetricRelabelConfigs: j.MetricRelabel,
		})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("localcluster: prometheus: %w", errors.Join(problems...))
	}
	return yaml.Marshal(c)
}

// promDuration writes d as Prometheus reads durations: whole milliseconds.
func promDuration(d time.Duration) string {
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func getOK(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
