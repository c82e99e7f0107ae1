// Package controller is the live shell around the decision core: it watches
// the cluster through informers, builds a snapshot every --scan-interval (and
// at once when a new pod becomes unschedulable or a removal ends), hands it
// with the outcomes of earlier actions to autoscaler.Step, and carries the
// plan out through the cloud provider, node taints and the Eviction API
// (actuator.go, removal.go). It reports the loop's status through the
// status ConfigMap, Prometheus metrics and Kubernetes events, and acts
// only while it holds the leader Lease.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/slim"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Options are the shell's settings; Autoscaler holds the decision options.
type Options struct {
	Autoscaler autoscaler.Options
	// ScanInterval is the loop period (--scan-interval, 10s).
	ScanInterval time.Duration
	// Namespace holds the status ConfigMap, the Lease and the priority
	// expander ConfigMap (--namespace, kube-system).
	Namespace string
	// StatusConfigMapName (--status-config-map-name, cluster-autoscaler-status).
	StatusConfigMapName string
	// WriteStatusConfigMap (--write-status-configmap, true).
	WriteStatusConfigMap bool
	// Status bounds the status ConfigMap.
	Status status.RenderOptions
	// MaxPodEvictionTime (--max-pod-eviction-time, 2m).
	MaxPodEvictionTime time.Duration
	// APIConcurrency bounds the API calls one action of a loop makes at
	// once (taints of many nodes, a removal batch's re-checks): the
	// client's burst (--kube-client-burst, 10), so that its rate, not a
	// round trip at a time, bounds them. Below 1 means one at a time.
	APIConcurrency int
	// Address serves /metrics and /health-check (--address, :8085); "" serves nothing.
	Address string
	// EmitPerNodeGroupMetrics adds the per-group gauges
	// (--emit-per-nodegroup-metrics, false).
	EmitPerNodeGroupMetrics bool
	Liveness                Liveness
	LeaderElection          LeaderElection
	// CacheSyncTimeout bounds the wait for the informer caches at start;
	// the wait is reported every CacheSyncReport.
	CacheSyncTimeout, CacheSyncReport time.Duration
	// Sharding coordinates this autoscaler with the others on the cluster
	// (shards.go).
	Sharding Sharding
	// Recorder, when set, receives every loop's input and plan.
	Recorder autoscaler.Recorder
	// Dynamic reads and writes ProvisioningRequests and CapacityBuffers
	// (CRDs); needed when Autoscaler.ProvisioningRequests.Enabled or
	// Autoscaler.CapacityBuffers.Enabled().
	Dynamic dynamic.Interface
	// Clock is the time source; nil means the real clock.
	Clock clock.WithTicker
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultOptions are the upstream defaults.
func DefaultOptions() Options {
	return Options{
		Autoscaler:           autoscaler.DefaultOptions(),
		ScanInterval:         10 * time.Second,
		Namespace:            "kube-system",
		StatusConfigMapName:  "cluster-autoscaler-status",
		WriteStatusConfigMap: true,
		Status:               status.DefaultRenderOptions(),
		MaxPodEvictionTime:   2 * time.Minute,
		APIConcurrency:       10,
		Address:              ":8085",
		Liveness:             DefaultLiveness(),
		LeaderElection:       DefaultLeaderElection(),
		CacheSyncTimeout:     10 * time.Minute,
		CacheSyncReport:      30 * time.Second,
	}
}

// Controller runs the loop.
type Controller struct {
	opts     Options
	client   kubernetes.Interface
	cp       cloudprovider.CloudProvider
	clock    clock.WithTicker
	log      *slog.Logger
	auto     *autoscaler.Autoscaler
	factory  informers.SharedInformerFactory
	listers  *listers
	recorder record.EventRecorder
	// broadcaster sends the recorder's events to the API server; Run
	// shuts it down when it returns.
	broadcaster record.EventBroadcaster
	events      *eventSink
	metrics     *metrics
	trigger     chan struct{}
	live        *liveness
	// outcomes collects what became of actions between loops.
	outcomes *actuation.Queue
	// actuator carries plans out: cluster, the live actuator; benchmarks
	// replace it with a recording one.
	actuator actuation.Actuator
	cluster  *liveActuator
	watch    *watchReporter
	// requests watches ProvisioningRequests and PodTemplates; nil when
	// they are not enabled.
	requests *requestWatch
	// demand reads the HPAs' demand for the forecast buffers; nil when
	// they are off.
	demand *demandWatch
	// buffers watches CapacityBuffers and what they refer to; nil when
	// neither buffer flag is on.
	buffers *bufferWatch
	// shards are this shard's claims (loop goroutine only).
	shards shardState

	// mirror keeps the snapshot in step with the caches (loop goroutine
	// only); lastStatus is the last status document written.
	mirror     *mirror
	lastStatus *status.Document
	mu         sync.Mutex
	lastLoop   time.Time

	// priorityVersion is the resourceVersion of the priority ConfigMap in
	// force ("missing" while it cannot be read), priorities what it says,
	// handed to the core in every Input; loop goroutine only.
	priorityVersion string
	priorities      *expander.Priorities
}

// New builds a controller; nothing runs until Run.
func New(client kubernetes.Interface, cp cloudprovider.CloudProvider, opts Options) (*Controller, error) {
	if opts.ScanInterval <= 0 {
		return nil, fmt.Errorf("--scan-interval: must be positive, got %s", opts.ScanInterval)
	}
	if len(opts.Sharding.Peers) > 0 && !opts.WriteStatusConfigMap {
		return nil, fmt.Errorf("--shard-peer-status-config-map: shards publish their claims in their status ConfigMap; it needs --write-status-configmap=true")
	}
	for _, p := range opts.Sharding.Peers {
		if p == opts.StatusConfigMapName {
			return nil, fmt.Errorf("--shard-peer-status-config-map=%s: that is this autoscaler's own --status-config-map-name", p)
		}
	}
	auto, err := autoscaler.New(opts.Autoscaler)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Status.MaxBytes <= 0 {
		opts.Status = status.DefaultRenderOptions()
	}
	c := &Controller{
		opts: opts, client: client, cp: cp, clock: opts.Clock, log: opts.Logger, auto: auto,
		factory:  informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(slim.New().Transform)),
		metrics:  newMetrics(),
		trigger:  make(chan struct{}, 1),
		outcomes: actuation.NewQueue(),
		mirror:   newMirror(opts.Autoscaler.Pending),
		live:     &liveness{limits: opts.Liveness, clock: opts.Clock},
	}
	withDRA, err := servesDRA(client.Discovery())
	if err != nil {
		return nil, err
	}
	if withDRA {
		opts.Logger.Info("watching Dynamic Resource Allocation objects: resource.k8s.io/v1 deviceclasses, resourceclaims, resourceclaimtemplates, resourceslices")
	} else {
		opts.Logger.Info("the API server does not serve resource.k8s.io/v1: Dynamic Resource Allocation claims and slices are not watched")
	}
	c.listers = newListers(c.factory, withDRA)
	c.broadcaster = record.NewBroadcaster()
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cluster-autoscaler"})
	c.events = &eventSink{recorder: c.recorder, limiter: newEventLimiter(5 * time.Minute), clock: opts.Clock}
	c.cluster = &liveActuator{client: client, cp: cp, clock: opts.Clock, log: opts.Logger, metrics: c.metrics,
		events: c.events, outcomes: c.outcomes, maxPodEvictionTime: opts.MaxPodEvictionTime,
		maxNodeDeletionTime: opts.Autoscaler.ScaleDown.MaxCloudProviderNodeDeletionTime,
		drainOptions:        opts.Autoscaler.DrainOptions(), pdbs: c.listers.pdbs,
		statusNamespace: opts.Namespace, statusName: opts.StatusConfigMapName, apiConcurrency: opts.APIConcurrency}
	if opts.EmitPerNodeGroupMetrics {
		c.metrics.emitPerGroup()
	}
	c.actuator = c.cluster
	if opts.Autoscaler.ProvisioningRequests.Enabled {
		if opts.Dynamic == nil {
			return nil, fmt.Errorf("--enable-provisioning-requests: no dynamic client to watch ProvisioningRequests with")
		}
		w, infs, err := newRequestWatch(opts.Dynamic, c.factory, c.poke)
		if err != nil {
			return nil, err
		}
		c.requests, c.cluster.requests = w, w
		c.listers.informers = append(c.listers.informers, infs...)
	}
	if bo := opts.Autoscaler.CapacityBuffers; bo.Enabled() {
		if opts.Dynamic == nil {
			return nil, fmt.Errorf("--capacity-buffer-controller-enabled, --capacity-buffer-pod-injection-enabled: no dynamic client to watch CapacityBuffers with")
		}
		w, infs, err := newBufferWatch(bo, opts.Dynamic, c.factory, c.poke)
		if err != nil {
			return nil, err
		}
		c.buffers = w
		c.addInformers(infs)
	}
	if opts.Autoscaler.Forecast.Enabled {
		w, infs := newDemandWatch(c.factory)
		c.demand = w
		c.addInformers(infs)
	}
	c.watch = newWatchReporter(c.log, c.clock, c.metrics, opts.CacheSyncReport)
	if err := c.watch.attach(c.listers.informers); err != nil {
		return nil, err
	}
	_, err = c.factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.maybeTrigger(obj) },
		UpdateFunc: func(_, obj any) { c.maybeTrigger(obj) },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// maybeTrigger asks for an immediate loop when a pod becomes pending:
// marked unschedulable, or waiting for a node with a bypassed scheduler.
func (c *Controller) maybeTrigger(obj any) {
	if p, ok := obj.(*v1.Pod); ok && pending.Classify(p, c.opts.Autoscaler.Pending).Pending() {
		c.poke()
	}
}

// poke asks for a loop soon.
func (c *Controller) poke() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run serves metrics and health, waits for the leader Lease when leader
// election is on, and loops until ctx ends. A controller runs once: when
// Run returns, its event broadcaster is shut down.
func (c *Controller) Run(ctx context.Context) error {
	defer c.broadcaster.Shutdown()
	if c.opts.Address != "" {
		srv, err := c.serveHTTP(c.opts.Address)
		if err != nil {
			return err
		}
		defer func() { _ = srv.Close() }()
	}
	if !c.opts.LeaderElection.Enabled {
		return c.lead(ctx)
	}
	return c.runWithLeaderElection(ctx, c.lead)
}

// addInformers adds informers the loop waits for, each kind once.
func (c *Controller) addInformers(infs []namedInformer) {
	for _, inf := range infs {
		if !slices.ContainsFunc(c.listers.informers, func(n namedInformer) bool { return n.name == inf.name }) {
			c.listers.informers = append(c.listers.informers, inf)
		}
	}
}

// lead is what the leader does: start informers, clean what a crashed
// predecessor left on this instance's nodes, loop. Nothing that can fail
// for a while (a cloud refresh, a node an admission webhook refuses to
// update) ends it: a leader that exits would be restarted into the same
// failure, and hold the Lease for nothing in between.
func (c *Controller) lead(ctx context.Context) error {
	c.live.startLeading()
	defer c.live.stopLeading()
	c.factory.Start(ctx.Done())
	if c.buffers != nil {
		c.buffers.start(ctx.Done())
	}
	if c.requests != nil {
		c.requests.start(ctx.Done())
	}
	if err := c.watch.waitForSync(ctx, c.listers, c.opts.CacheSyncTimeout); err != nil {
		return err
	}
	// Providers with a loop of their own (kwok creates its Nodes) run it
	// only while this replica leads.
	if r, ok := c.cp.(interface{ Run(context.Context) }); ok {
		go r.Run(ctx)
	}
	ticker := c.clock.NewTicker(c.opts.ScanInterval)
	defer ticker.Stop()
	defer c.cluster.wait()
	cleaned := false
	for {
		now := c.clock.Now()
		c.live.loopStarted(now)
		// The loop acts only once the taints an earlier run left are
		// cleaned: a clean-up after the first removal would strip this
		// run's own taints.
		// Until then each tick retries it, and the liveness probe sees
		// loops that do not succeed.
		if !cleaned {
			cleaned = c.cleanUpAtStart(ctx)
		}
		if cleaned {
			if err := c.RunOnce(ctx); err != nil {
				c.log.Error("autoscaling loop failed", "err", err)
			} else {
				c.live.loopSucceeded(c.clock.Now())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		case <-c.outcomes.Ready():
			// Outcomes, like a burst of new pending pods, trigger one
			// loop a second at most: a removal that a lagging cache plans
			// again and the re-check calls off again must not spin.
			if err := sleep(ctx, c.clock, time.Second); err != nil {
				return nil
			}
		case <-c.trigger:
			if err := sleep(ctx, c.clock, time.Second); err != nil {
				return nil
			}
		}
	}
}
