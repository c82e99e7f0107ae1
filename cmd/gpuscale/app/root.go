// Package app is the gpuscale command line: the root command, `version`,
// `metrics-adapter`, `dcgm-sim`, `inference-sim`, `simulate`, `explain`, `demo`, and
// `cluster-autoscaler`, whose flags (upstream names and defaults) are
// owned by internal/run and pkg/autoscalerflags.
package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/run"
	"github.com/gpuscale/gpuscale/internal/version"
)

// runners are what long-running commands call once their flags are parsed
// and valid; tests put stand-ins in.
type runners struct {
	clusterAutoscaler func(context.Context, *run.ClusterAutoscalerOptions) error
}

// NewRootCommand builds the gpuscale command tree. Each call builds fresh
// flags, so tests and embedders can run it more than once.
func NewRootCommand() *cobra.Command {
	return newRootCommand(runners{clusterAutoscaler: run.ClusterAutoscaler})
}

func newRootCommand(r runners) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuscale",
		Short: "Autoscaling for Kubernetes clusters that run GPU workloads",
		Long: `Autoscaling for Kubernetes clusters that run GPU workloads.

gpuscale grows and shrinks node groups (EKS Auto Scaling groups, GKE node
pools, kwok for local clusters) for pending pods and idle nodes, with GPUs
understood throughout: nodes whose device plugin has not advertised their
GPUs yet, scale from zero with GPU templates, GPU nodes judged by GPU
requests. It keeps the Cluster Autoscaler's flag names, so existing
deployments carry over.

It also serves GPU metrics from Prometheus to the HorizontalPodAutoscaler
(metrics-adapter, reading prometheus-adapter's rules), simulates a cluster
and its autoscalers in virtual time on scenarios and real traces (simulate),
explains why something did or did not scale (explain), and plays the whole
GPU autoscaling walkthrough on a local control plane (demo).`,
		Version:       version.Get().String(),
		SilenceUsage:  true, // a bad flag value is explained by its error; usage would bury it
		SilenceErrors: true, // main prints the error once
	}
	root.SetVersionTemplate("gpuscale {{.Version}}\n")
	addLogging(root)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newVersionCommand(), newClusterAutoscalerCommand(r.clusterAutoscaler), newMetricsAdapterCommand(),
		newDCGMSimCommand(), newInferenceSimCommand(), newSimulateCommand(), newExplainCommand(), newDemoCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeVersion(cmd.OutOrStdout())
		},
	}
}
