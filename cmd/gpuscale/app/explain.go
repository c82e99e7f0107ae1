package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/internal/kubeconfig"
	"github.com/gpuscale/gpuscale/pkg/explain"
)

// explainFlags are the flags of `gpuscale explain`.
type explainFlags struct {
	Kubeconfig          string
	Namespace           string
	StatusConfigMapName string
	Timeout             time.Duration
}

func newExplainCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain (pod NAMESPACE/NAME | node NAME | hpa NAMESPACE/NAME)",
		Short: "Say in plain words why a pod did or did not scale up, why a node stays, what an HPA computed",
		Long: `Explain reads the live cluster and answers "why?":

  pod NAMESPACE/NAME   why the pod did or did not trigger a scale-up, per node group
  node NAME            why the node is not removed (the blocking pod and rule), or
                       since when it is unneeded
  hpa NAMESPACE/NAME   the HPA's metrics against their targets, its replica counts and
                       conditions, and the controller's arithmetic replayed on the
                       metrics the metrics APIs serve now

Pod and node answers come from the autoscaler's status ConfigMap (--namespace,
--status-config-map-name) and the events it writes.`,
		Example: `  gpuscale explain pod default/trainer-0
  gpuscale explain node gpu-a10g-7
  gpuscale explain hpa default/gpu-hpa-test --kubeconfig ~/.kube/config`,
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"pod", "node", "hpa"},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.Timeout)
			defer cancel()
			r, err := runExplain(ctx, f, args[0], args[1])
			if err != nil {
				return err
			}
			_, err = r.WriteTo(cmd.OutOrStdout())
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses the in-cluster configuration or the default kubeconfig")
	fs.StringVar(&f.Namespace, "namespace", "kube-system", "Namespace of the autoscaler's status ConfigMap")
	fs.StringVar(&f.StatusConfigMapName, "status-config-map-name", "cluster-autoscaler-status", "Name of the autoscaler's status ConfigMap")
	fs.DurationVar(&f.Timeout, "timeout", 30*time.Second, "How long to wait for the API server")
	return cmd
}

func runExplain(ctx context.Context, f explainFlags, kind, name string) (explain.Report, error) {
	if kind != "pod" && kind != "node" && kind != "hpa" {
		return explain.Report{}, fmt.Errorf("explain: unknown kind %q: want pod, node or hpa", kind)
	}
	cfg, err := kubeconfig.RESTConfig(f.Kubeconfig)
	if err != nil {
		return explain.Report{}, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return explain.Report{}, fmt.Errorf("--kubeconfig %q: %w", f.Kubeconfig, err)
	}
	o := explain.DefaultOptions()
	o.Client, o.Namespace, o.StatusConfigMap = client, f.Namespace, f.StatusConfigMapName
	if kind == "hpa" {
		if o.Metrics, err = explain.NewAPIMetrics(cfg); err != nil {
			return explain.Report{}, err
		}
	}
	e, err := explain.New(o)
	if err != nil {
		return explain.Report{}, err
	}
	switch kind {
	case "pod":
		return e.Pod(ctx, name)
	case "node":
		return e.Node(ctx, name)
	}
	return e.HPA(ctx, name)
}
