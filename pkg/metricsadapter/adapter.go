// Package metricsadapter runs gpuscale's metrics adapter: an aggregated
// API server (sigs.k8s.io/custom-metrics-apiserver: TLS, delegated
// authentication and authorization) serving custom.metrics.k8s.io v1beta1
// and v1beta2 and external.metrics.k8s.io v1beta1 from Prometheus, driven
// by prometheus-adapter's rule configuration. Subpackages hold the steps:
// config (parsing), naming (rules), query (matchers), prom (the Prometheus
// client) and provider (discovery and serving).
package metricsadapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/metadata"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/dynamicmapper"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/provider"
)

// Options are the adapter's settings. The flag names are
// prometheus-adapter's; the API server's own flags (--secure-port,
// --cert-dir, --lister-kubeconfig, --authentication-kubeconfig, ...) come
// from custom-metrics-apiserver's AdapterBase.
type Options struct {
	// Base is the API server half; its flags are added by AddFlags.
	Base *basecmd.AdapterBase
	// PrometheusURL is Prometheus's address (--prometheus-url). Empty: the
	// Helm values form's prometheus.url and port.
	PrometheusURL string
	// ConfigFile is the rules file (--config).
	ConfigFile string
	// RelistInterval is how often series are listed (--metrics-relist-interval).
	RelistInterval time.Duration
	// MetricsMaxAge is how far back series are listed (--metrics-max-age);
	// zero means RelistInterval.
	MetricsMaxAge time.Duration
	// PrometheusTimeout bounds each Prometheus call (--prometheus-timeout).
	PrometheusTimeout time.Duration
	// PrometheusCAFile and PrometheusTokenFile are optional
	// (--prometheus-ca-file, --prometheus-token-file).
	PrometheusCAFile, PrometheusTokenFile string
	// MinRediscoverInterval spaces the series listings that requests for
	// unknown metrics trigger (--metrics-rediscover-min-interval).
	MinRediscoverInterval time.Duration
	// PrometheusCompression asks Prometheus for gzip-compressed replies
	// (--prometheus-compression).
	PrometheusCompression bool
}

// NewOptions returns the defaults: relist every 10 minutes as
// prometheus-adapter, API discovery refreshed as often, Prometheus calls
// bounded at 5s, rediscovery on a miss at most once a second.
func NewOptions() *Options {
	return &Options{
		Base:                  &basecmd.AdapterBase{Name: "gpuscale-metrics-adapter", DiscoveryInterval: 10 * time.Minute},
		RelistInterval:        10 * time.Minute,
		PrometheusTimeout:     5 * time.Second,
		MinRediscoverInterval: time.Second,
	}
}

// AddFlags adds the adapter's flags and AdapterBase's to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL,
		"URL of the Prometheus to query, for example http://prometheus.monitoring.svc:9090 (default: prometheus.url and port of a Helm values config)")
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile,
		"File with the metric rules: prometheus-adapter's config (rules, externalRules) or the prometheus-adapter Helm chart's values (prometheus, rules.custom, rules.external)")
	fs.DurationVar(&o.RelistInterval, "metrics-relist-interval", o.RelistInterval,
		"How often to list series and refresh the set of served metrics; unknown metrics are also looked up when first requested")
	fs.DurationVar(&o.MetricsMaxAge, "metrics-max-age", o.MetricsMaxAge,
		"How far back to look for series when listing them (default: the relist interval)")
	fs.DurationVar(&o.PrometheusTimeout, "prometheus-timeout", o.PrometheusTimeout,
		"Deadline of each call to Prometheus; a call that runs over is answered with a 504 Timeout error")
	fs.StringVar(&o.PrometheusCAFile, "prometheus-ca-file", o.PrometheusCAFile,
		"PEM CA bundle that verifies Prometheus's certificate (optional)")
	fs.StringVar(&o.PrometheusTokenFile, "prometheus-token-file", o.PrometheusTokenFile,
		"File holding a bearer token for Prometheus, re-read on every call (optional)")
	fs.DurationVar(&o.MinRediscoverInterval, "metrics-rediscover-min-interval", o.MinRediscoverInterval,
		"Least time between two series listings triggered by requests for unknown metrics")
	fs.BoolVar(&o.PrometheusCompression, "prometheus-compression", o.PrometheusCompression,
		"Ask Prometheus for gzip-compressed replies; saves bandwidth to a distant Prometheus at the cost of CPU on both sides")
	o.Base.FlagSet = fs
	o.Base.InstallFlags()
}

// Validate checks the adapter's own settings.
func (o *Options) Validate() error {
	var errs []error
	if o.ConfigFile == "" {
		errs = append(errs, errors.New("--config: must be set"))
	}
	if o.RelistInterval <= 0 {
		errs = append(errs, fmt.Errorf("--metrics-relist-interval: %v must be positive", o.RelistInterval))
	}
	if o.MetricsMaxAge < 0 {
		errs = append(errs, fmt.Errorf("--metrics-max-age: %v must not be negative", o.MetricsMaxAge))
	}
	if o.MetricsMaxAge > 0 && o.MetricsMaxAge < o.RelistInterval {
		errs = append(errs, fmt.Errorf("--metrics-max-age: %v is shorter than --metrics-relist-interval %v, so series could be missed between listings",
			o.MetricsMaxAge, o.RelistInterval))
	}
	if o.PrometheusTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--prometheus-timeout: %v must be positive", o.PrometheusTimeout))
	}
	if o.MinRediscoverInterval < 0 {
		errs = append(errs, fmt.Errorf("--metrics-rediscover-min-interval: %v must not be negative", o.MinRediscoverInterval))
	}
	return errors.Join(errs...)
}

// Rules is a loaded configuration: compiled rules and where Prometheus is.
type Rules struct {
	Custom, External []*naming.Rule
	// PrometheusURL is the flag's value, else the Helm values'.
	PrometheusURL string
	// Warnings are the config's accepted-but-unused settings.
	Warnings []string
}

// LoadRules loads and compiles the rules in configFile; promURL, when set,
// overrides a URL given by the config.
func LoadRules(configFile, promURL string) (*Rules, error) {
	cfg, err := config.Load(configFile)
	if err != nil {
		return nil, err
	}
	r, err := CompileRules(cfg, promURL)
	if err != nil {
		return nil, err
	}
	if r.PrometheusURL == "" {
		return nil, fmt.Errorf("--prometheus-url: must be set (the config %s gives no prometheus.url)", configFile)
	}
	return r, nil
}

// CompileRules compiles a parsed configuration's rules, naming them as the
// adapter does ("rules[0]", "externalRules[1]"); promURL, when set,
// overrides a URL given by the config, and may be left empty.
func CompileRules(cfg *config.Config, promURL string) (*Rules, error) {
	r := &Rules{PrometheusURL: promURL, Warnings: cfg.Warnings}
	for i, c := range cfg.Rules {
		rule, err := naming.Compile(fmt.Sprintf("rules[%d]", i), c, false)
		if err != nil {
			return nil, err
		}
		r.Custom = append(r.Custom, rule)
	}
	for i, c := range cfg.ExternalRules {
		rule, err := naming.Compile(fmt.Sprintf("externalRules[%d]", i), c, true)
		if err != nil {
			return nil, err
		}
		r.External = append(r.External, rule)
	}
	if r.PrometheusURL == "" {
		r.PrometheusURL = cfg.PrometheusURL
	}
	return r, nil
}

// Run serves the metrics APIs until ctx is done.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	rules, err := LoadRules(o.ConfigFile, o.PrometheusURL)
	if err != nil {
		return err
	}
	log := klog.Background().WithName("metrics-adapter")
	for _, w := range rules.Warnings {
		log.Info("config: "+w, "config", o.ConfigFile)
	}
	reg := legacyregistry.Registerer() // served on the adapter's /metrics
	client, err := prom.New(prom.Options{URL: rules.PrometheusURL, Timeout: o.PrometheusTimeout, CAFile: o.PrometheusCAFile,
		TokenFile: o.PrometheusTokenFile, Compression: o.PrometheusCompression, Metrics: prom.NewMetrics(reg)})
	if err != nil {
		return err
	}
	mapper, err := o.Base.RESTMapper()
	if err != nil {
		return err
	}
	// Resources installed later (CRDs) become known on the next refresh.
	if m, ok := mapper.(*dynamicmapper.RegeneratingDiscoveryRESTMapper); ok && o.Base.DiscoveryInterval > 0 {
		m.RunUntil(ctx.Done())
	}
	restConfig, err := o.Base.ClientConfig()
	if err != nil {
		return err
	}
	metaClient, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	p, err := provider.New(provider.Options{
		Rules: rules.Custom, ExternalRules: rules.External, Prometheus: client, Mapper: mapper,
		Lister:         provider.NewInformerLister(metaClient, mapper, ctx.Done()),
		RelistInterval: o.RelistInterval, MetricsMaxAge: o.MetricsMaxAge, MinRediscoverInterval: o.MinRediscoverInterval,
		Logger: log, Metrics: provider.NewMetrics(reg),
	})
	if err != nil {
		return err
	}
	o.Base.WithCustomMetrics(p)
	o.Base.WithExternalMetrics(p)
	go p.Run(ctx)
	log.Info("serving custom and external metrics", "prometheus", client.URL(),
		"rules", len(rules.Custom), "externalRules", len(rules.External), "relistInterval", o.RelistInterval)
	return o.Base.Run(ctx)
}
