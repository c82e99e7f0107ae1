// Package schedulerparity is a test-only harness that asks the real
// kube-scheduler (v1.37.2) which nodes a pending pod fits on, so that
// gpuscale's own predicates can be checked against it on random clusters.
//
// It lives in its own Go module because k8s.io/kubernetes is not meant to be
// imported as a library: its go.mod pins every staging repository at v0.0.0,
// and pulling it into the main module would drag that replace block (and a
// very large dependency graph) into every gpuscale build.
package schedulerparity

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Cluster is the state the oracle evaluates a pending pod against.
type Cluster struct {
	Nodes                  []*v1.Node
	Pods                   []*v1.Pod // scheduled pods; Spec.NodeName names one of Nodes
	Namespaces             []*v1.Namespace
	PersistentVolumes      []*v1.PersistentVolume
	PersistentVolumeClaims []*v1.PersistentVolumeClaim
	StorageClasses         []*storagev1.StorageClass
	CSINodes               []*storagev1.CSINode
	// Dynamic Resource Allocation objects (resource.k8s.io/v1).
	DeviceClasses  []*resourceapi.DeviceClass
	ResourceClaims []*resourceapi.ResourceClaim
	ResourceSlices []*resourceapi.ResourceSlice
	// ResourceClaimTemplates are never read by kube-scheduler (it waits
	// for the generated claim); gpuscale reads them for pods whose claim
	// is not made yet.
	ResourceClaimTemplates []*resourceapi.ResourceClaimTemplate
}

// FilterPlugins are the plugins the oracle runs, in the order the default
// v1 scheduler profile lists them. Order matters beyond taste: the framework
// stops at the first plugin that rejects, so it decides which reasons are
// reported (feasibility itself does not depend on it).
var FilterPlugins = []string{
	names.NodeUnschedulable,
	names.NodeName,
	names.TaintToleration,
	names.NodeAffinity,
	names.NodePorts,
	names.NodeResourcesFit,
	names.VolumeRestrictions,
	names.NodeVolumeLimits,
	names.VolumeBinding,
	names.VolumeZone,
	names.PodTopologySpread,
	names.InterPodAffinity,
	names.DynamicResources,
}

// preFilterPlugins is the subset of FilterPlugins that also implement
// PreFilter. The framework refuses a profile that enables PreFilter for a
// plugin lacking it, so this cannot simply be FilterPlugins again.
var preFilterPlugins = []string{
	names.NodeAffinity,
	names.NodePorts,
	names.NodeResourcesFit,
	names.VolumeRestrictions,
	names.NodeVolumeLimits,
	names.VolumeBinding,
	names.VolumeZone,
	names.PodTopologySpread,
	names.InterPodAffinity,
	names.DynamicResources,
}

// Verdict is the scheduler's answer for one node.
type Verdict struct {
	Feasible bool
	// Stage is "PreFilter" when the node was rejected before any Filter ran
	// (whole-pod rejection or a PreFilterResult that left the node out),
	// "Filter" when a Filter plugin rejected it, and "" when feasible.
	Stage string
	// Plugin is the rejecting plugin as the framework recorded it; empty
	// for nodes dropped by a PreFilterResult, which the framework does not
	// attribute to a single plugin.
	Plugin  string
	Code    fwk.Code
	Reasons []string
}

// Oracle holds a scheduler framework wired to one cluster snapshot.
type Oracle struct {
	fw       framework.Framework
	snapshot *schedcache.Snapshot
	nodes    []string
}

var (
	setupOnce sync.Once
	// recorder is shared by every Oracle, so that frameworks outliving the
	// context they were built with still have a running recorder; parity
	// runs build thousands of oracles and must not gain a goroutine each.
	// Its stop channel is never closed.
	recorder *metrics.MetricAsyncRecorder
	// profileTemplate carries the defaulted plugin args of the v1 config.
	profileTemplate config.KubeSchedulerProfile
	setupErr        error
)

func setup() {
	// Instrumented plugin wrappers look up metric vectors while the
	// framework is built; they are nil until the scheduler metrics are
	// initialised. Register is idempotent.
	metrics.Register()
	recorder = metrics.NewMetricsAsyncRecorder(1000, time.Second, make(chan struct{}))

	cfg, err := latest.Default()
	if err != nil {
		setupErr = fmt.Errorf("defaulting scheduler config: %w", err)
		return
	}
	if len(cfg.Profiles) != 1 {
		setupErr = fmt.Errorf("defaulted scheduler config has %d profiles, want 1", len(cfg.Profiles))
		return
	}
	def := cfg.Profiles[0]
	set := func(ps ...string) config.PluginSet {
		var s config.PluginSet
		for _, p := range ps {
			s.Enabled = append(s.Enabled, config.Plugin{Name: p})
		}
		return s
	}
	profileTemplate = config.KubeSchedulerProfile{
		SchedulerName: def.SchedulerName,
		// PluginConfig holds the args that v1 defaulting produced for every
		// default plugin; the framework only reads those it instantiates.
		PluginConfig: def.PluginConfig,
		Plugins: &config.Plugins{
			// A profile is rejected without exactly one QueueSort and at
			// least one Bind plugin, though neither runs here.
			QueueSort: set(names.PrioritySort),
			PreFilter: set(preFilterPlugins...),
			Filter:    set(FilterPlugins...),
			Bind:      set(names.DefaultBinder),
		},
	}
}

// NewOracle builds a scheduler framework over c. The cluster must not be
// modified afterwards: the snapshot and listers share its objects.
func NewOracle(c *Cluster) (*Oracle, error) {
	setupOnce.Do(setup)
	if setupErr != nil {
		return nil, setupErr
	}

	// Plugins fetch their listers from the shared informer factory while
	// they are constructed. Rather than start informers against a fake API
	// server (goroutines plus an asynchronous sync), the objects are written
	// straight into the informers' indexers, which is what the listers read.
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	core, storage := factory.Core().V1(), factory.Storage().V1()
	if err := firstErr(
		addAll(core.Namespaces().Informer(), c.Namespaces),
		addAll(core.PersistentVolumes().Informer(), c.PersistentVolumes),
		addAll(core.PersistentVolumeClaims().Informer(), c.PersistentVolumeClaims),
		addAll(storage.StorageClasses().Informer(), c.StorageClasses),
		addAll(storage.CSINodes().Informer(), c.CSINodes),
	); err != nil {
		return nil, fmt.Errorf("loading listers: %w", err)
	}

	// NewSnapshot would give a pod on an unknown node a NodeInfo without a
	// Node, which the scheduler's own cache never lists and plugins are not
	// written to handle.
	known := sets.New[string]()
	for _, n := range c.Nodes {
		known.Insert(n.Name)
	}
	for _, p := range c.Pods {
		if !known.Has(p.Spec.NodeName) {
			return nil, fmt.Errorf("pod %s/%s is bound to unknown node %q", p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
	snapshot := schedcache.NewSnapshot(c.Pods, c.Nodes)

	// NewFramework starts a metrics-flushing goroutine bound to ctx before it
	// applies WithMetricsRecorder, so that default recorder is orphaned from
	// the start. Cancelling ctx once construction is done ends it; none of
	// the enabled plugin factories keeps the context.
	ctx, cancel := context.WithCancel(quietContext())
	defer cancel()
	profile := profileTemplate // the Plugins and PluginConfig are only read
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithSharedDRAManager(newDRAObjects(c)),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(storage.CSINodes().Lister())),
		frameworkruntime.WithMetricsRecorder(recorder),
		frameworkruntime.WithLogger(logr.Discard()),
	)
	if err != nil {
		return nil, fmt.Errorf("building scheduler framework: %w", err)
	}
	return &Oracle{fw: fw, snapshot: snapshot, nodes: sets.List(known)}, nil
}

func addAll[T any](inf cache.SharedIndexInformer, objs []T) error {
	for _, o := range objs {
		if err := inf.GetIndexer().Add(o); err != nil {
			return err
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func quietContext() context.Context {
	return klog.NewContext(context.Background(), logr.Discard())
}

// CycleError is a plugin's Error status: kube-scheduler aborts the pod's
// scheduling cycle (it binds the pod nowhere and retries later), for
// example when a claim asks for all devices of a pool that is being
// updated.
type CycleError struct {
	Stage, Node string
	Err         error
}

func (e *CycleError) Error() string {
	if e.Node != "" {
		return fmt.Sprintf("%s on node %q: %v", e.Stage, e.Node, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Stage, e.Err)
}

// Feasible reports, for every node, whether the scheduler's PreFilter and
// Filter plugins accept pod there, and for rejected nodes the reason strings
// the scheduler produced.
func (o *Oracle) Feasible(pod *v1.Pod) (map[string]bool, map[string][]string, error) {
	verdicts, err := o.Explain(pod)
	if err != nil {
		return nil, nil, err
	}
	ok := make(map[string]bool, len(verdicts))
	why := make(map[string][]string)
	for n, v := range verdicts {
		ok[n] = v.Feasible
		if !v.Feasible {
			why[n] = v.Reasons
		}
	}
	return ok, why, nil
}

// Explain is Feasible with the rejecting stage, plugin and status code.
// It follows the scheduler's findNodesThatFitPod: one PreFilter pass for
// the pod, then Filter on every node the PreFilter result still allows. An
// error means the scheduler itself would have failed the cycle (a plugin
// returned Error rather than a rejection), not that the pod is infeasible.
func (o *Oracle) Explain(pod *v1.Pod) (map[string]Verdict, error) {
	ctx := quietContext()
	state := framework.NewCycleState()
	out := make(map[string]Verdict, len(o.nodes))

	preRes, s, narrowing := o.fw.RunPreFilterPlugins(ctx, state, pod)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, &CycleError{Stage: "PreFilter", Err: s.AsError()}
		}
		// A PreFilter rejection applies to every node alike.
		for _, n := range o.nodes {
			out[n] = Verdict{Stage: "PreFilter", Plugin: s.Plugin(), Code: s.Code(), Reasons: s.Reasons()}
		}
		return out, nil
	}

	for _, n := range o.nodes {
		if !preRes.AllNodes() && !preRes.NodeNames.Has(n) {
			// Same message the scheduler records for such nodes; the
			// plugin set is printed in sorted order like sets.List.
			out[n] = Verdict{
				Stage:   "PreFilter",
				Code:    fwk.UnschedulableAndUnresolvable,
				Reasons: []string{fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(narrowing))},
			}
			continue
		}
		ni, err := o.snapshot.Get(n)
		if err != nil {
			return nil, fmt.Errorf("node %q missing from snapshot: %w", n, err)
		}
		fs := o.fw.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case fs.IsSuccess():
			out[n] = Verdict{Feasible: true}
		case fs.Code() == fwk.Error:
			return nil, &CycleError{Stage: "Filter", Node: n, Err: fs.AsError()}
		default:
			out[n] = Verdict{Stage: "Filter", Plugin: fs.Plugin(), Code: fs.Code(), Reasons: fs.Reasons()}
		}
	}
	return out, nil
}
