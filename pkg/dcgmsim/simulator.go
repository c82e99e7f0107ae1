// Package dcgmsim stands in for NVIDIA's dcgm-exporter on clusters without
// GPUs (kwok nodes, tests, demos): it reads nodes and pods through client-go
// informers and serves dcgm-exporter's default metrics, names and labels for
// every GPU a node advertises (allocatable nvidia.com/gpu), with the
// namespace, pod and container labels of the pod holding it. Each pod's
// utilization is set by annotation or over HTTP, with an optional linear ramp.
package dcgmsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DefaultListenAddress is dcgm-exporter's port.
const DefaultListenAddress = ":9400"

// DefaultControlAddress is where the load control endpoint listens: on
// loopback, so that only processes on the same machine (in a pod: its own
// containers, and kubectl port-forward) can set loads.
const DefaultControlAddress = "127.0.0.1:9401"

// Options configure New.
type Options struct {
	// Client reads nodes and pods. Required.
	Client kubernetes.Interface
	// Node restricts the simulation to one node, as dcgm-exporter runs one
	// per node; empty simulates every node.
	Node string
	// Clock drives ramps and energy (default: the real clock).
	Clock clock.Clock
	// DriverVersion is the DCGM_FI_DRIVER_VERSION label (default DefaultDriverVersion).
	DriverVersion string
	// Logger reports bad annotations (default: slog.Default()).
	Logger *slog.Logger
	// ShutdownTimeout bounds the HTTP server's graceful stop (default 5s).
	ShutdownTimeout time.Duration
	// SyncWarnInterval is how often a warning says that the nodes and pods
	// have not been read yet (default 10s): an API server that cannot be
	// reached would otherwise leave the start silent.
	SyncWarnInterval time.Duration
	// APIServer names the API server in that warning (no credentials).
	APIServer string
}

// Simulator serves simulated dcgm-exporter metrics and the load endpoint.
type Simulator struct {
	opts     Options
	loads    *LoadBook
	registry *prometheus.Registry

	nodeFactory, podFactory informers.SharedInformerFactory
	nodes                   corelisters.NodeLister
	pods                    corelisters.PodLister
	synced                  []cache.InformerSynced

	mu    sync.Mutex // guards alloc
	alloc *allocator
}

// New builds a Simulator; Start or Serve runs it.
func New(opts Options) (*Simulator, error) {
	if opts.Client == nil {
		return nil, errors.New("dcgmsim: Options.Client is required")
	}
	if opts.Node != "" {
		if msgs := validation.IsDNS1123Subdomain(opts.Node); len(msgs) > 0 {
			return nil, fmt.Errorf("dcgmsim: node %q is not a node name: %s", opts.Node, strings.Join(msgs, "; "))
		}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	if opts.SyncWarnInterval <= 0 {
		opts.SyncWarnInterval = 10 * time.Second
	}
	s := &Simulator{opts: opts, loads: NewLoadBook(opts.Clock), alloc: newAllocator(), registry: prometheus.NewRegistry()}

	// Pending pods hold no device: watch bound pods only, and only the
	// node's own with --node, as the per-node dcgm-exporter sees them.
	podSelector := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	nodeTweak := func(*metav1.ListOptions) {}
	if opts.Node != "" {
		podSelector = fields.OneTermEqualSelector("spec.nodeName", opts.Node).String()
		nodeSelector := fields.OneTermEqualSelector("metadata.name", opts.Node).String()
		nodeTweak = func(o *metav1.ListOptions) { o.FieldSelector = nodeSelector }
	}
	dropManagedFields := informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	s.nodeFactory = informers.NewSharedInformerFactoryWithOptions(opts.Client, 0,
		informers.WithTweakListOptions(nodeTweak), dropManagedFields)
	s.podFactory = informers.NewSharedInformerFactoryWithOptions(opts.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = podSelector }), dropManagedFields)

	nodeInformer := s.nodeFactory.Core().V1().Nodes()
	podInformer := s.podFactory.Core().V1().Pods()
	s.nodes, s.pods = nodeInformer.Lister(), podInformer.Lister()
	s.synced = []cache.InformerSynced{nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, obj any) { s.observe(obj) },
		DeleteFunc: s.forget,
	}); err != nil {
		return nil, fmt.Errorf("dcgmsim: pod informer: %w", err)
	}

	collector, err := NewCollector(CollectorOptions{Inventory: s.GPUs, Loads: s.loads, Clock: opts.Clock, DriverVersion: opts.DriverVersion})
	if err != nil {
		return nil, err
	}
	if err := s.registry.Register(collector); err != nil {
		return nil, fmt.Errorf("dcgmsim: register collector: %w", err)
	}
	return s, nil
}

// Loads is the simulator's load book, for setting loads in-process.
func (s *Simulator) Loads() *LoadBook { return s.loads }

// Registry holds the simulated metrics (no process or Go runtime metrics,
// as dcgm-exporter's endpoint has none).
func (s *Simulator) Registry() *prometheus.Registry { return s.registry }

// Start runs the informers and waits for their caches.
func (s *Simulator) Start(ctx context.Context) error {
	s.nodeFactory.Start(ctx.Done())
	s.podFactory.Start(ctx.Done())
	synced := make(chan bool, 1)
	go func() { synced <- cache.WaitForCacheSync(ctx.Done(), s.synced...) }()
	start := s.opts.Clock.Now()
	for {
		warn := s.opts.Clock.NewTimer(s.opts.SyncWarnInterval)
		select {
		case ok := <-synced:
			warn.Stop()
			if !ok {
				return fmt.Errorf("dcgmsim: informer caches did not sync: %w", context.Cause(ctx))
			}
			return nil
		case <-warn.C():
			s.opts.Logger.Warn("dcgm-sim: still waiting to list nodes and pods; is the API server reachable, and may this identity list them?",
				"apiServer", s.opts.APIServer, "waited", s.opts.Clock.Since(start).Round(time.Second))
		}
	}
}

// Handler serves /metrics and /healthz: what Prometheus scrapes.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return mux
}

// Control serves the load control endpoint (ControlHandler) for the pods
// the simulator sees. Whoever reaches it sets every pod's load, so it is
// served apart from the metrics, on its own listener.
func (s *Simulator) Control() http.Handler {
	return ControlHandler(s.loads, s.podExists)
}

// Serve starts the informers and waits for their caches, then serves
// Handler on metrics and, when control is not nil, Control on control,
// until ctx is done. It logs "dcgm-sim serving" once both serve, so the
// line means the caches are synced.
func (s *Simulator) Serve(ctx context.Context, metrics, control net.Listener) error {
	if err := s.Start(ctx); err != nil {
		_ = metrics.Close()
		if control != nil {
			_ = control.Close()
		}
		return err
	}
	servers := []*http.Server{{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	listeners := []net.Listener{metrics}
	if control != nil {
		servers = append(servers, &http.Server{Handler: s.Control(), ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, control)
	}
	errc := make(chan error, len(servers))
	for i := range servers {
		srv, ln := servers[i], listeners[i]
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("dcgmsim: serve %s: %w", ln.Addr(), err)
			}
		}()
	}
	s.logServing(metrics, control)
	var served error
	select {
	case served = <-errc:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdown); err != nil && served == nil {
			served = fmt.Errorf("dcgmsim: shutdown: %w", err)
		}
	}
	return served
}

func (s *Simulator) logServing(metrics, control net.Listener) {
	args := []any{"address", metrics.Addr().String(), "control", "off"}
	if control != nil {
		args[3] = control.Addr().String()
	}
	if s.opts.Node != "" {
		args = append(args, "node", s.opts.Node)
		if _, err := s.nodes.Get(s.opts.Node); err != nil {
			s.opts.Logger.Warn("dcgm-sim: the node does not exist (yet); its GPUs are reported once it does", "node", s.opts.Node)
		}
	}
	s.opts.Logger.Info("dcgm-sim serving", args...)
}

// GPUs lists the simulated GPUs now, sorted by node and index, with the
// pod container holding each.
func (s *Simulator) GPUs() []GPU {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	if s.opts.Node != "" {
		nodes = onlyNode(nodes, s.opts.Node)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alloc.inventory(nodes, pods)
}

func onlyNode(nodes []*corev1.Node, name string) []*corev1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return []*corev1.Node{n}
		}
	}
	return nil
}

func (s *Simulator) podExists(namespace, name string) bool {
	_, err := s.pods.Pods(namespace).Get(name)
	return err == nil
}

func (s *Simulator) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if err := s.loads.Observe(pod); err != nil {
		s.opts.Logger.Warn("ignoring simulated load annotation", "err", err)
	}
}

func (s *Simulator) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		s.loads.Forget(pod.Namespace + "/" + pod.Name)
	}
}
