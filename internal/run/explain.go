package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/internal/kubeconfig"
	"github.com/gpuscale/gpuscale/pkg/explain"
)

// ExplainOptions are the flags of `gpuscale explain`.
type ExplainOptions struct {
	Kubeconfig          string
	Context             string
	Namespace           string
	Output              string
	AutoscalerNamespace string
	StatusConfigMapName string
	AdapterConfig       string
	PrometheusURL       string
	Timeout             time.Duration
}

// NewExplainOptions returns the flags' defaults.
func NewExplainOptions() *ExplainOptions {
	return &ExplainOptions{Output: "text", AutoscalerNamespace: "kube-system",
		StatusConfigMapName: "cluster-autoscaler-status", Timeout: 30 * time.Second}
}

// AddFlags defines the flags on fs, with o's values as their defaults.
func (o *ExplainOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses $KUBECONFIG, ~/.kube/config, or the in-cluster configuration")
	fs.StringVar(&o.Context, "context", o.Context, "The kubeconfig context to use; empty uses the current context")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "Namespace of the pods and HPAs named; empty uses the kubeconfig context's, else \"default\"")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: text, json or yaml (json and yaml write the structured answer)")
	fs.StringVar(&o.AutoscalerNamespace, "autoscaler-namespace", o.AutoscalerNamespace, "Namespace the autoscaler runs in and writes its status ConfigMap to (its --namespace)")
	fs.StringVar(&o.StatusConfigMapName, "status-config-map-name", o.StatusConfigMapName, "Name of the autoscaler's status ConfigMap")
	fs.StringVar(&o.AdapterConfig, "adapter-config", o.AdapterConfig, "The metrics adapter's rules (prometheus-adapter's file or Helm values); empty finds them in the cluster")
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "The adapter's Prometheus; empty uses the rules' prometheus.url or the adapter Deployment's --prometheus-url (in-cluster Service URLs are reached through the API server's service proxy)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the API server")
}

// Explain runs `gpuscale explain`: it answers about every object the
// arguments name and writes the answers in the chosen format. namespaceSet
// tells whether -n/--namespace was given.
func Explain(ctx context.Context, f *ExplainOptions, namespaceSet bool, args []string, out io.Writer) error {
	format := strings.ToLower(f.Output)
	if format != "text" && format != "json" && format != "yaml" {
		return fmt.Errorf("-o/--output: %q is not a format; want text, json or yaml", f.Output)
	}
	if namespaceSet && f.Namespace == "" {
		return fmt.Errorf("-n/--namespace: must not be empty")
	}
	if f.Timeout <= 0 {
		return fmt.Errorf("--timeout: must be positive, got %s", f.Timeout)
	}
	// Arguments are checked before any connection, so that a wrong form
	// gets its message without a cluster.
	if _, err := explain.ParseTargets(args, explain.Namespace{Value: f.Namespace, Set: namespaceSet}); err != nil {
		return err
	}
	kc, err := kubeconfig.Load(f.Kubeconfig, f.Context)
	if err != nil {
		return err
	}
	ns := explain.Namespace{Value: kc.Namespace, Set: namespaceSet}
	if namespaceSet {
		ns.Value = f.Namespace
	}
	targets, err := explain.ParseTargets(args, ns)
	if err != nil {
		return err
	}
	e, err := newExplainer(kc.Config, f, targets)
	if err != nil {
		return err
	}
	reports := make([]explain.Report, 0, len(targets))
	for _, t := range targets {
		r, err := e.Explain(ctx, t)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	return writeReports(out, format, reports)
}

// newExplainer connects to the cluster; the metrics clients and the
// adapter's rules only when an HPA is asked about.
func newExplainer(cfg *rest.Config, f *ExplainOptions, targets []explain.Target) (*explain.Explainer, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	o := explain.DefaultOptions()
	o.Client, o.AutoscalerNamespace, o.StatusConfigMap = client, f.AutoscalerNamespace, f.StatusConfigMapName
	for _, t := range targets {
		if t.Kind != explain.KindHPA {
			continue
		}
		if o.Metrics, err = explain.NewAPIMetrics(cfg); err != nil {
			return nil, err
		}
		if o.Rules, err = adapterLocator(cfg, client, f); err != nil {
			return nil, err
		}
		break
	}
	return explain.New(o)
}

func adapterLocator(cfg *rest.Config, client kubernetes.Interface, f *ExplainOptions) (*explain.AdapterLocator, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server transport: %w", err)
	}
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server address: %w", err)
	}
	return explain.NewAdapterLocator(explain.LocatorOptions{Client: client, Dynamic: dyn,
		Mapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		ConfigFile: f.AdapterConfig, PrometheusURL: f.PrometheusURL, Transport: transport, ProxyHost: host.String()}), nil
}

// writeReports writes one answer as itself and several as {"items": [...]}.
func writeReports(out io.Writer, format string, reports []explain.Report) error {
	if format == "text" {
		for i, r := range reports {
			if i > 0 {
				if _, err := io.WriteString(out, "\n"); err != nil {
					return err
				}
			}
			if _, err := r.WriteTo(out); err != nil {
				return err
			}
		}
		return nil
	}
	var v any = reports[0]
	if len(reports) > 1 {
		v = struct {
			Items []explain.Report `json:"items"`
		}{reports}
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = out.Write(data)
	return err
}
