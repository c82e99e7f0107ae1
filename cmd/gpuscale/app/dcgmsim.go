package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/internal/kubeconfig"
	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
	"github.com/gpuscale/gpuscale/pkg/redact"
)

// DCGMSimConfig holds the dcgm-sim flags.
type DCGMSimConfig struct {
	Kubeconfig    string
	ListenAddress string
	// ControlAddress is where PUT/GET /load listen; empty turns them off.
	ControlAddress string
	Node           string
	DriverVersion  string
}

func newDCGMSimCommand() *cobra.Command {
	cfg := DCGMSimConfig{}
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
			if err := cfg.validate(); err != nil {
				return err
			}
			restConfig, err := kubeconfig.RESTConfig(cfg.Kubeconfig)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %q: %w", cfg.Kubeconfig, err)
			}
			logger := slog.Default()
			sim, err := dcgmsim.New(dcgmsim.Options{Client: client, Node: cfg.Node, DriverVersion: cfg.DriverVersion, Logger: logger,
				APIServer: redact.URL(restConfig.Host)})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.ListenAddress)
			if err != nil {
				return fmt.Errorf("--listen-address %q: %w", cfg.ListenAddress, err)
			}
			var control net.Listener
			if cfg.ControlAddress != "" {
				if control, err = net.Listen("tcp", cfg.ControlAddress); err != nil {
					_ = ln.Close()
					return fmt.Errorf("--control-address %q: %w", cfg.ControlAddress, err)
				}
			}
			// Serve logs "dcgm-sim serving" once the informers have synced.
			return sim.Serve(cmd.Context(), ln, control)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses the in-cluster configuration or the default kubeconfig")
	f.StringVar(&cfg.ListenAddress, "listen-address", dcgmsim.DefaultListenAddress, "Address of the /metrics and /healthz endpoints")
	f.StringVar(&cfg.ControlAddress, "control-address", dcgmsim.DefaultControlAddress,
		"Address of the /load control endpoint, which sets any pod's load; loopback by default, \":9401\" to let other hosts in, empty to turn it off")
	f.StringVar(&cfg.Node, "node", "", "Simulate this node's GPUs only (as dcgm-exporter's per-node pod does); empty: every node")
	f.StringVar(&cfg.DriverVersion, "driver-version", dcgmsim.DefaultDriverVersion, "Value of the DCGM_FI_DRIVER_VERSION label")
	return cmd
}

// validate checks the flags before anything is contacted.
func (c DCGMSimConfig) validate() error {
	var errs []error
	if c.Node != "" {
		if msgs := validation.IsDNS1123Subdomain(c.Node); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node: not a node name (%s), got %q", strings.Join(msgs, "; "), c.Node))
		}
	}
	for flag, addr := range map[string]string{"listen-address": c.ListenAddress, "control-address": c.ControlAddress} {
		if addr == "" && flag == "control-address" {
			continue
		}
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("--%s: want [host]:port, got %q", flag, addr))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
