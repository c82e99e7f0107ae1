package app

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// ErrNotWired is what RunClusterAutoscaler returns until the live
// controller sets it.
var ErrNotWired = errors.New("cluster-autoscaler: the live controller is not wired into this binary (app.RunClusterAutoscaler is unset)")

// RunClusterAutoscaler runs the node autoscaler with validated flags until
// ctx is done. The live controller (pkg/controller) replaces it from main;
// a variable keeps this package free of the controller's dependencies.
var RunClusterAutoscaler = func(ctx context.Context, cfg *ClusterAutoscalerConfig) error {
	return ErrNotWired
}

func newClusterAutoscalerCommand() *cobra.Command {
	var cfg *ClusterAutoscalerConfig
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
			if err := cfg.Validate(); err != nil {
				return err
			}
			return RunClusterAutoscaler(cmd.Context(), cfg)
		},
	}
	cfg = ClusterAutoscalerFlags(cmd.Flags())
	cmd.Flags().SortFlags = false // keep the grouping of ClusterAutoscalerFlags
	return cmd
}
