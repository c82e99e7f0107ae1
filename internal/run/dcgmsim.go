package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
	"github.com/gpuscale/gpuscale/pkg/redact"
)

// DCGMSimOptions are the flags of `gpuscale dcgm-sim`.
type DCGMSimOptions struct {
	Kubeconfig    string
	ListenAddress string
	// ControlAddress is where PUT/GET /load listen; empty turns them off.
	ControlAddress string
	Node           string
	DriverVersion  string
}

// NewDCGMSimOptions returns the flags' defaults.
func NewDCGMSimOptions() *DCGMSimOptions {
	return &DCGMSimOptions{ListenAddress: dcgmsim.DefaultListenAddress, ControlAddress: dcgmsim.DefaultControlAddress,
		DriverVersion: dcgmsim.DefaultDriverVersion}
}

// AddFlags defines the flags on fs, with o's values as their defaults.
func (o *DCGMSimOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses the in-cluster configuration or the default kubeconfig")
	f.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "Address of the /metrics and /healthz endpoints")
	f.StringVar(&o.ControlAddress, "control-address", o.ControlAddress,
		"Address of the /load control endpoint, which sets any pod's load; loopback by default, \":9401\" to let other hosts in, empty to turn it off")
	f.StringVar(&o.Node, "node", o.Node, "Simulate this node's GPUs only (as dcgm-exporter's per-node pod does); empty: every node")
	f.StringVar(&o.DriverVersion, "driver-version", o.DriverVersion, "Value of the DCGM_FI_DRIVER_VERSION label")
}

// Validate checks the flags before anything is contacted, reporting every
// bad one.
func (o *DCGMSimOptions) Validate() error {
	var errs []error
	if o.Node != "" {
		if msgs := validation.IsDNS1123Subdomain(o.Node); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node: not a node name (%s), got %q", strings.Join(msgs, "; "), o.Node))
		}
	}
	errs = append(errs, checkAddresses(o.ListenAddress, o.ControlAddress)...)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// DCGMSim serves `gpuscale dcgm-sim` with validated options until ctx ends.
func DCGMSim(ctx context.Context, o *DCGMSimOptions) error {
	restConfig, client, err := clientFor(o.Kubeconfig)
	if err != nil {
		return err
	}
	logger := slog.Default()
	sim, err := dcgmsim.New(dcgmsim.Options{Client: client, Node: o.Node, DriverVersion: o.DriverVersion, Logger: logger,
		APIServer: redact.URL(restConfig.Host)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.ListenAddress)
	if err != nil {
		return fmt.Errorf("--listen-address %q: %w", o.ListenAddress, err)
	}
	var control net.Listener
	if o.ControlAddress != "" {
		if control, err = net.Listen("tcp", o.ControlAddress); err != nil {
			_ = ln.Close()
			return fmt.Errorf("--control-address %q: %w", o.ControlAddress, err)
		}
	}
	// Serve logs "dcgm-sim serving" once the informers have synced.
	return sim.Serve(ctx, ln, control)
}
