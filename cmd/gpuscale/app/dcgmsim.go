package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/run"
)

func newDCGMSimCommand() *cobra.Command {
	opts := run.NewDCGMSimOptions()
	cmd := &cobra.Command{
		Use:   "dcgm-sim",
		Short: "Serve dcgm-exporter's GPU metrics for the pods on GPU nodes, with simulated load",
		Long: `A stand-in for NVIDIA's dcgm-exporter on clusters without GPUs (kwok nodes,
tests, demos). Every GPU a node advertises (allocatable nvidia.com/gpu) gets
dcgm-exporter's default metrics (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED...)
and labels (gpu, UUID, device, modelName, Hostname, and namespace, pod,
container of the pod holding it). The model comes from the node's
nvidia.com/gpu.product, k8s.amazonaws.com/accelerator or
cloud.google.com/gke-accelerator label.

Set a pod's load with the annotation gpuscale.dev/simulated-gpu-util: "100"
(and optionally gpuscale.dev/simulated-gpu-util-ramp: 30s), or over HTTP on
the control address (loopback by default: whoever reaches it sets every
pod's load): PUT /load/{namespace}/{pod} with {"util": 100, "ramp": "30s"}.
See docs/dcgm-sim.md.`,
		Example: `  gpuscale dcgm-sim --kubeconfig ~/.kube/config
  curl -X PUT localhost:9401/load/default/gpu-hpa-test-7c6b78785c-gq8rf -d '{"util":100,"ramp":"30s"}'
  curl localhost:9400/metrics | grep DCGM_FI_DEV_GPU_UTIL`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			return run.DCGMSim(cmd.Context(), opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}
