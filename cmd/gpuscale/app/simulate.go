package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/simulate"
)

func newSimulateCommand() *cobra.Command {
	opts := simulate.NewOptions()
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a scenario or a trace through the autoscaler in virtual time",
		Long: `Replay a scenario or a trace through the real decision core in virtual time: an in-memory
cluster with node groups, provisioning and device-plugin delays, kube-scheduler placement, the node
autoscaler every scan interval and HorizontalPodAutoscalers on load curves. Prints a summary (cost
against a lower bound that keeps each pod whole on a node group it may run on, the looser fluid bound,
node-hours, GPU-hours, pending waits, scale-ups and scale-downs) and writes a CSV time series and an
HTML page of charts on request. --compare runs several option sets side by side.`,
		Example: `  gpuscale simulate --builtin seed-walkthrough --html walkthrough.html
  gpuscale simulate --scenario examples/sim/training-burst.yaml --compare expander=least-waste --compare expander=price
  gpuscale simulate --alibaba-pods openb_pod_list_default.csv --alibaba-nodes openb_node_list_all_node.csv --time-scale 100
  gpuscale simulate --azure AzureLLMInferenceTrace_code.csv --compare expander=least-waste --compare expander=price
  gpuscale simulate --scenario groups.yaml --jobs jobs.csv --jobs-columns submit=start,duration=runtime,gpus=gpu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return simulate.Run(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}
