package localcluster

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestPrometheusConfigRendersJobsAsWritten(t *testing.T) {
	repl := "$1"
	jobs := []ScrapeJob{
		DCGMExporterJob("127.0.0.1:9400"),
		{
			Name: "other", Targets: []string{"127.0.0.1:1", "127.0.0.1:2"}, MetricsPath: "/m", HonorLabels: true,
			MetricRelabel: []RelabelConfig{{SourceLabels: []string{"a"}, Regex: "(.*)", TargetLabel: "b", Replacement: &repl}},
		},
	}
	data, err := prometheusConfig(2500*time.Millisecond, jobs)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, data)
	}
	global := got["global"].(map[string]any)
	if global["scrape_interval"] != "2500ms" || global["scrape_timeout"] != "2500ms" {
		t.Errorf("global = %v, want scrape_interval and scrape_timeout 2500ms", global)
	}
	scrape := got["scrape_configs"].([]any)
	if len(scrape) != len(jobs) {
		t.Fatalf("%d scrape_configs, want %d:\n%s", len(scrape), len(jobs), data)
	}
	for i, j := range jobs {
		sc := scrape[i].(map[string]any)
		if sc["job_name"] != j.Name || sc["honor_labels"] != j.HonorLabels {
			t.Errorf("scrape_configs[%d] = %v, want job %q honor_labels %v", i, sc, j.Name, j.HonorLabels)
		}
		static := sc["static_configs"].([]any)[0].(map[string]any)
		if targets, _ := json.Marshal(static["targets"]); string(targets) != mustJSON(t, j.Targets) {
			t.Errorf("scrape_configs[%d] targets %s, want %v", i, targets, j.Targets)
		}
		if labels, _ := json.Marshal(static["labels"]); len(j.Labels) > 0 && string(labels) != mustJSON(t, j.Labels) {
			t.Errorf("scrape_configs[%d] labels %s, want %v", i, labels, j.Labels)
		}
	}
	if mr := scrape[1].(map[string]any)["metric_relabel_configs"].([]any)[0].(map[string]any); mr["replacement"] != "$1" || mr["target_label"] != "b" {
		t.Errorf("metric_relabel_configs[0] = %v", mr)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrometheusConfigRefusesBadJobs(t *testing.T) {
	for name, tc := range map[string]struct {
		jobs []ScrapeJob
		want string
	}{
		"no name":    {[]ScrapeJob{{Targets: []string{"x:1"}}}, "Jobs[0].Name: required"},
		"duplicate":  {[]ScrapeJob{{Name: "a", Targets: []string{"x:1"}}, {Name: "a", Targets: []string{"x:2"}}}, `Jobs[1].Name: duplicate "a"`},
		"no targets": {[]ScrapeJob{{Name: "a"}}, "Jobs[0].Targets"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := prometheusConfig(time.Second, tc.jobs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestServiceMonitorJobLabelsTargetsLikeThePrometheusOperator(t *testing.T) {
	j := DCGMExporterJob("127.0.0.1:9400")
	if j.HonorLabels {
		t.Error("honor_labels true: the exporter's pod labels would not be renamed exported_pod")
	}
	for _, k := range []string{"namespace", "pod", "container", "service", "endpoint"} {
		if j.Labels[k] == "" {
			t.Errorf("target label %s missing: %v", k, j.Labels)
		}
	}
	if j.Name != DCGMExporterTarget().Service {
		t.Errorf("job %q, want the Service name %q", j.Name, DCGMExporterTarget().Service)
	}
	empty := ServiceMonitorJob([]string{"a:1"}, ServiceMonitorTarget{Namespace: "ns"})
	if len(empty.Labels) != 1 || empty.Labels["namespace"] != "ns" {
		t.Errorf("labels %v, want only namespace=ns (empty identity fields add no label)", empty.Labels)
	}
}

func TestKwokctlConfiguration(t *testing.T) {
	data, err := kwokctlConfiguration("/bin", Options{
		ControllerManagerArgs: []string{"--horizontal-pod-autoscaler-downscale-stabilization=15s"},
		APIServerArgs:         []string{"v=2", "--enable-priority-and-fairness"},
		KwokControllerArgs:    []string{"--manage-all-nodes=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var conf kwokctlConfig
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Options["bindAddress"] != "127.0.0.1" || conf.Options["etcdBinary"] != filepath.Join("/bin", "etcd") {
		t.Errorf("options = %v", conf.Options)
	}
	want := map[string][]extraArg{
		"kube-controller-manager": {{"horizontal-pod-autoscaler-sync-period", "5s"}, {"feature-gates", "HPAScaleToZero=true"}, {"horizontal-pod-autoscaler-downscale-stabilization", "15s"}},
		"kube-apiserver":          {{"feature-gates", "HPAScaleToZero=true"}, {"v", "2"}, {"enable-priority-and-fairness", "true"}},
		"kwok-controller":         {{"manage-all-nodes", "false"}},
	}
	if len(conf.ComponentsPatches) != len(want) {
		t.Fatalf("patches %+v, want components %v", conf.ComponentsPatches, want)
	}
	for _, p := range conf.ComponentsPatches {
		if mustJSON(t, p.ExtraArgs) != mustJSON(t, want[p.Name]) {
			t.Errorf("%s args %+v, want %+v", p.Name, p.ExtraArgs, want[p.Name])
		}
	}
	if _, err := kwokctlConfiguration("/bin", Options{SchedulerArgs: []string{"--=x"}}); err == nil || !strings.Contains(err.Error(), "kube-scheduler") {
		t.Errorf("empty flag name: err = %v, want one naming kube-scheduler", err)
	}
}

func TestUniqueNameIsAStaleCleanupName(t *testing.T) {
	a, b := uniqueName("TestFoo/Bar_baz"), uniqueName("TestFoo/Bar_baz")
	if a == b {
		t.Errorf("two names alike: %s", a)
	}
	for _, n := range []string{a, uniqueName(""), uniqueName(strings.Repeat("x", 60))} {
		if !regexp.MustCompile(`^[a-z0-9][-a-z0-9]*$`).MatchString(n) || len(n) > 45 {
			t.Errorf("name %q is not a short DNS label", n)
		}
		m := ownedName.FindStringSubmatch(n)
		if m == nil || m[1] != itoa(os.Getpid()) {
			t.Errorf("name %q does not carry this process id for stale cleanup", n)
		}
	}
	if !strings.HasPrefix(a, "testfoo-bar-baz-p") {
		t.Errorf("name %q, want the prefix cleaned to testfoo-bar-baz", a)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRelayProgressReportsLongBuilds(t *testing.T) {
	pr, pw := io.Pipe()
	var out strings.Builder
	done := make(chan struct{})
	go func() { relayProgress(pr, &out, 20*time.Millisecond); close(done) }()
	io.WriteString(pw, "build-tools: building kube-apiserver (first run only, a few minutes)...\n")
	time.Sleep(120 * time.Millisecond)
	io.WriteString(pw, "build-tools: built kube-apiserver in 3s\n")
	pw.Close()
	<-done
	got := out.String()
	for _, want := range []string{"  building kube-apiserver (first", "still building kube-apiserver (", "  built kube-apiserver in 3s"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q:\n%s", want, got)
		}
	}
	if i := strings.Index(got, "built kube-apiserver"); i >= 0 && strings.Contains(got[i:], "still building") {
		t.Errorf("still reporting after the build ended:\n%s", got)
	}
}
