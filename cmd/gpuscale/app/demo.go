package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/demo"
)

func newDemoCommand() *cobra.Command {
	var quick bool
	opts := demo.Defaults()
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play the GPU autoscaling walkthrough on a local control plane (HPA on GPU utilization, node autoscaling)",
		Long: `Starts a real Kubernetes control plane on 127.0.0.1 (etcd, kube-apiserver,
kube-scheduler, kube-controller-manager, kwok nodes), Prometheus, and this
binary's dcgm-sim, metrics-adapter and cluster-autoscaler, then plays the GPU
HPA guide with node autoscaling added:

  deploy gpu-hpa-test (1 GPU)      the autoscaler adds the first GPU node
  apply the HPA (gpu_utilization AverageValue 30, 1 to 2 replicas)
  stress the GPU (load 100)        HPA 100/30 -> 2 replicas, the second pod is pending
                                   the autoscaler adds one GPU node (no duplicate while
                                   its device plugin starts); HPA 50/30
  stop the stress (load 0)         HPA 0/30 -> 1 replica after its stabilization window
                                   the idle GPU node is drained and removed

--story inference plays an inference server instead: a CapacityBuffer keeps
one GPU node warm; a vLLM Deployment at 0 replicas with an HPA on the model's
queue (External metrics from inference-sim through Prometheus and the
adapter); requests arrive, the HPA scales 0 -> 3, the first replica starts on
the warm node and the autoscaler adds nodes for the others; the requests
stop, the HPA returns to 0 and the GPU nodes are removed.

The first run builds the pinned control-plane binaries and Prometheus with
hack/build-tools.sh (about ten minutes on two cores; run it from the gpuscale
checkout); later runs take a few minutes. Everything is deleted at the end
unless --keep. See docs/demo.md.`,
		Example: `  gpuscale demo
  gpuscale demo --quick          # short windows: about two minutes once built
  gpuscale demo --keep           # keep it running for kubectl until Ctrl-C
  gpuscale demo --story inference --quick`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick {
				q := demo.Quick()
				// Flags given explicitly win over --quick's timings.
				for name, set := range map[string]func(){
					"scrape-interval":            func() { q.ScrapeInterval = opts.ScrapeInterval },
					"metrics-relist-interval":    func() { q.MetricsRelistInterval = opts.MetricsRelistInterval },
					"downscale-stabilization":    func() { q.DownscaleStabilization = opts.DownscaleStabilization },
					"scan-interval":              func() { q.ScanInterval = opts.ScanInterval },
					"scale-down-unneeded-time":   func() { q.UnneededTime = opts.UnneededTime },
					"scale-down-delay-after-add": func() { q.DelayAfterAdd = opts.DelayAfterAdd },
					"provisioning-delay":         func() { q.ProvisioningDelay = opts.ProvisioningDelay },
					"device-plugin-delay":        func() { q.DevicePluginDelay = opts.DevicePluginDelay },
					"max-gpu-nodes":              func() { q.MaxGPUNodes = opts.MaxGPUNodes },
					"step-timeout":               func() { q.StepTimeout = opts.StepTimeout },
				} {
					if cmd.Flags().Changed(name) {
						set()
					}
				}
				q.Workdir, q.Keep, q.BinDir, q.Story = opts.Workdir, opts.Keep, opts.BinDir, opts.Story
				opts = q
			}
			opts.Out = cmd.OutOrStdout()
			res, err := demo.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if !opts.Keep {
				fmt.Fprintf(cmd.OutOrStdout(), "\nThe cluster is deleted. Run with --keep to poke around (the kubeconfig was %s).\n", res.Kubeconfig)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar((*string)(&opts.Story), "story", string(demo.StoryGPU), "The walkthrough: gpu (the seed's GPU-utilization HPA) or inference (scale to zero on the model's queue, warm capacity).")
	f.BoolVar(&quick, "quick", false, "Short windows throughout (scrape 1s, stabilization 10s, unneeded 5s, device plugin 3s); explicit flags still win.")
	f.BoolVar(&opts.Keep, "keep", false, "After the walkthrough keep everything running (kubeconfig printed) until interrupted.")
	f.StringVar(&opts.Workdir, "workdir", "", "Directory of the cluster and its logs (default $TMPDIR/gpuscale-demo).")
	f.StringVar(&opts.BinDir, "tools-dir", "", "Directory of prebuilt control-plane binaries and prometheus (default: build or reuse them with hack/build-tools.sh).")
	f.DurationVar(&opts.ScrapeInterval, "scrape-interval", opts.ScrapeInterval, "Prometheus scrape interval.")
	f.DurationVar(&opts.MetricsRelistInterval, "metrics-relist-interval", opts.MetricsRelistInterval, "The metrics adapter's --metrics-relist-interval.")
	f.DurationVar(&opts.DownscaleStabilization, "downscale-stabilization", opts.DownscaleStabilization, "kube-controller-manager's --horizontal-pod-autoscaler-downscale-stabilization (upstream 5m).")
	f.DurationVar(&opts.ScanInterval, "scan-interval", opts.ScanInterval, "The node autoscaler's --scan-interval.")
	f.DurationVar(&opts.UnneededTime, "scale-down-unneeded-time", opts.UnneededTime, "The node autoscaler's --scale-down-unneeded-time (upstream 10m).")
	f.DurationVar(&opts.DelayAfterAdd, "scale-down-delay-after-add", opts.DelayAfterAdd, "The node autoscaler's --scale-down-delay-after-add (upstream 10m).")
	f.DurationVar(&opts.ProvisioningDelay, "provisioning-delay", opts.ProvisioningDelay, "How long a new kwok GPU node takes to appear.")
	f.DurationVar(&opts.DevicePluginDelay, "device-plugin-delay", opts.DevicePluginDelay, "How long a new GPU node takes to advertise its GPU after it appears.")
	f.IntVar(&opts.MaxGPUNodes, "max-gpu-nodes", opts.MaxGPUNodes, "The kwok GPU group's maxSize; above 2 it shows that no duplicate node is ordered.")
	f.DurationVar(&opts.StepTimeout, "step-timeout", opts.StepTimeout, "How long each step may take before the demo gives up.")
	f.SortFlags = false
	return cmd
}
