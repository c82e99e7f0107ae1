package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
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

// explainFlags are the flags of `gpuscale explain`.
type explainFlags struct {
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

func newExplainCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain (TYPE NAME... | TYPE/NAME... | cluster)",
		Short: "Say why a pod did or did not scale up, why a node stays or went, what an HPA computed, the autoscaler's state",
		Long: `Explain reads the live cluster and answers "why?":

  pod NAME             why the pod did or did not trigger a scale-up, per node group,
                       and why its node group was chosen over the others
  node NAME            why the node is not removed (the blocking pod and rule), since
                       when it is unneeded, or, for a node that is gone, when and why
                       the autoscaler removed it
  hpa NAME             the HPA's metrics against their targets, the metrics-adapter
                       rule and PromQL behind each, its replica counts and conditions,
                       and the controller's arithmetic replayed on the metrics now
  nodegroup NAME       a node group's size and bounds, nodes by state, backoff,
                       limits reached, recent scale-ups and removals
  cluster              health and the health brake, node counts, scale-down cooldown,
                       backoffs, pending pods, kept nodes, consolidation

Types are written as kubectl writes them: pod, pods, po; node, no; hpa,
horizontalpodautoscaler; nodegroup, ng. TYPE/NAME works for each, several
objects may be named at once, and -n/--namespace is the namespace of pods
and HPAs (default: the kubeconfig context's, else "default"). The earlier
form TYPE NAMESPACE/NAME is still read where it is unambiguous.

Answers come from what the autoscaler publishes: its status ConfigMap
(--autoscaler-namespace, --status-config-map-name) and the events it writes.
HPA rules are read from --adapter-config, or found in the cluster: the
APIService of the metric's API names the adapter's Service, whose namesake
ConfigMap holds the rules under config.yaml (gpuscale's chart and
prometheus-adapter's both install it so).`,
		Example: `  gpuscale explain pod/trainer-0 -n ml
  gpuscale explain pod trainer-0 trainer-1 -n ml -o yaml
  gpuscale explain node gpu-a10g-7
  gpuscale explain nodegroup gpu-a100 -o json
  gpuscale explain cluster --context prod --autoscaler-namespace gpuscale
  gpuscale explain hpa/gpu-hpa-test --adapter-config adapter-values.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.Timeout)
			defer cancel()
			return runExplain(ctx, f, cmd.Flags().Changed("namespace"), args, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses $KUBECONFIG, ~/.kube/config, or the in-cluster configuration")
	fs.StringVar(&f.Context, "context", "", "The kubeconfig context to use; empty uses the current context")
	fs.StringVarP(&f.Namespace, "namespace", "n", "", "Namespace of the pods and HPAs named; empty uses the kubeconfig context's, else \"default\"")
	fs.StringVarP(&f.Output, "output", "o", "text", "Output format: text, json or yaml (json and yaml write the structured answer)")
	fs.StringVar(&f.AutoscalerNamespace, "autoscaler-namespace", "kube-system", "Namespace the autoscaler runs in and writes its status ConfigMap to (its --namespace)")
	fs.StringVar(&f.StatusConfigMapName, "status-config-map-name", "cluster-autoscaler-status", "Name of the autoscaler's status ConfigMap")
	fs.StringVar(&f.AdapterConfig, "adapter-config", "", "The metrics adapter's rules (prometheus-adapter's file or Helm values); empty finds them in the cluster")
	fs.StringVar(&f.PrometheusURL, "prometheus-url", "", "The adapter's Prometheus; empty uses the rules' prometheus.url or the adapter Deployment's --prometheus-url (in-cluster Service URLs are reached through the API server's service proxy)")
	fs.DurationVar(&f.Timeout, "timeout", 30*time.Second, "How long to wait for the API server")
	return cmd
}

// runExplain answers about every object the arguments name and writes the
// answers in the chosen format.
func runExplain(ctx context.Context, f explainFlags, namespaceSet bool, args []string, out io.Writer) error {
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
func newExplainer(cfg *rest.Config, f explainFlags, targets []explain.Target) (*explain.Explainer, error) {
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

func adapterLocator(cfg *rest.Config, client kubernetes.Interface, f explainFlags) (*explain.AdapterLocator, error) {
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
