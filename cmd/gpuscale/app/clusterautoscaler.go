package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/run"
)

func newClusterAutoscalerCommand(runner func(context.Context, *run.ClusterAutoscalerOptions) error) *cobra.Command {
	opts := run.NewClusterAutoscalerOptions()
	cmd := &cobra.Command{
		Use:   "cluster-autoscaler",
		Short: "Grow node groups for pending pods and remove underused nodes (Cluster Autoscaler flags)",
		Long: `Watches pending pods and nodes; adds nodes to a node group when pods cannot be
scheduled and a new node would take them, and removes nodes that are underused
and whose pods fit elsewhere. GPU-aware throughout. Flags keep the upstream
Cluster Autoscaler's names and defaults; see docs/flags.md.`,
		Example: `  gpuscale cluster-autoscaler --cloud-provider=aws --expander=least-waste \
    --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster
  gpuscale cluster-autoscaler --cloud-provider=kwok --cloud-config=kwok.yaml --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Refuse bad values before anything starts.
			if err := opts.Validate(); err != nil {
				return err
			}
			return runner(cmd.Context(), opts)
		},
	}
	cmd.Flags().SortFlags = false // keep the grouping of the flag definitions
	opts.AddFlags(cmd.Flags())
	return cmd
}
