package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/run"
)

func newExplainCommand() *cobra.Command {
	opts := run.NewExplainOptions()
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
			ctx, cancel := context.WithTimeout(cmd.Context(), opts.Timeout)
			defer cancel()
			return run.Explain(ctx, opts, cmd.Flags().Changed("namespace"), args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}
