package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/inferencesim"
)

// InferenceSimOptions are the flags of `gpuscale inference-sim`.
type InferenceSimOptions struct {
	Kubeconfig    string
	ListenAddress string
	// ControlAddress is where PUT/GET /load listen; empty turns them off.
	ControlAddress string
	ModelLabel     string
	SlotsPerPod    int
	// PrefillDuration and RequestDuration drive the time-to-first-token
	// histogram (inferencesim.Options).
	PrefillDuration time.Duration
	RequestDuration time.Duration
}

// NewInferenceSimOptions returns the flags' defaults.
func NewInferenceSimOptions() *InferenceSimOptions {
	return &InferenceSimOptions{ListenAddress: ":9402", ControlAddress: "127.0.0.1:9403",
		ModelLabel: inferencesim.DefaultModelLabel, SlotsPerPod: inferencesim.DefaultSlotsPerPod,
		PrefillDuration: inferencesim.DefaultPrefillDuration, RequestDuration: inferencesim.DefaultRequestDuration}
}

// AddFlags defines the flags on fs, with o's values as their defaults.
func (o *InferenceSimOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses the in-cluster configuration or the default kubeconfig")
	f.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "Address of the /metrics endpoint")
	f.StringVar(&o.ControlAddress, "control-address", o.ControlAddress,
		"Address of the /load control endpoint, which sets any model's load; loopback by default, empty to turn it off")
	f.StringVar(&o.ModelLabel, "model-label", o.ModelLabel, "Pod label whose value is the model a pod serves")
	f.IntVar(&o.SlotsPerPod, "slots-per-pod", o.SlotsPerPod, "Requests one server runs at once (vLLM's max_num_seqs); the rest wait")
	f.DurationVar(&o.PrefillDuration, "prefill-duration", o.PrefillDuration, "Time to first token of a request that does not queue")
	f.DurationVar(&o.RequestDuration, "request-duration", o.RequestDuration,
		"How long a request holds its slot; a queued request waits its turn at slots-per-pod requests per request-duration")
}

// Validate checks the flags before anything is contacted, reporting every
// bad one.
func (o *InferenceSimOptions) Validate() error {
	var errs []error
	if msgs := validation.IsQualifiedName(o.ModelLabel); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--model-label: not a label key (%v), got %q", msgs, o.ModelLabel))
	}
	if o.SlotsPerPod < 1 {
		errs = append(errs, fmt.Errorf("--slots-per-pod: must be at least 1, got %d", o.SlotsPerPod))
	}
	if o.PrefillDuration <= 0 {
		errs = append(errs, fmt.Errorf("--prefill-duration: must be positive, got %s", o.PrefillDuration))
	}
	if o.RequestDuration <= 0 {
		errs = append(errs, fmt.Errorf("--request-duration: must be positive, got %s", o.RequestDuration))
	}
	errs = append(errs, checkAddresses(o.ListenAddress, o.ControlAddress)...)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// InferenceSim serves `gpuscale inference-sim` with validated options
// until ctx ends.
func InferenceSim(ctx context.Context, o *InferenceSimOptions) error {
	_, client, err := clientFor(o.Kubeconfig)
	if err != nil {
		return err
	}
	sim, err := inferencesim.New(inferencesim.Options{Client: client, ModelLabel: o.ModelLabel, SlotsPerPod: o.SlotsPerPod,
		PrefillDuration: o.PrefillDuration, RequestDuration: o.RequestDuration})
	if err != nil {
		return err
	}
	servers := []struct {
		flag, addr string
		h          http.Handler
	}{{"listen-address", o.ListenAddress, sim.Handler()}}
	if o.ControlAddress != "" {
		servers = append(servers, struct {
			flag, addr string
			h          http.Handler
		}{"control-address", o.ControlAddress, sim.ControlHandler()})
	}
	errc := make(chan error, len(servers))
	var running []*http.Server
	for _, s := range servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			for _, r := range running {
				_ = r.Close()
			}
			return fmt.Errorf("--%s %q: %w", s.flag, s.addr, err)
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		running = append(running, srv)
		go func() { errc <- srv.Serve(ln) }()
	}
	slog.Default().Info("inference-sim serving", "address", o.ListenAddress, "control", o.ControlAddress)
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range running {
		_ = r.Shutdown(shutdown)
	}
	return nil
}
