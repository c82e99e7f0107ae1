package controller

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The whole live loop, in the scope of the upstream Cluster Autoscaler's
// RunOnce benchmarks: objects in informer caches (a fake clientset), the
// provider refreshed, the snapshot built, Step, the actions carried out by
// a recording actuator, events emitted and the status ConfigMap written.

// benchProvider is one group that never changes: every loop sees the same
// cluster and decides the same.
type benchProvider struct{ group snapshot.NodeGroup }

func (p *benchProvider) Name() string                                    { return "bench" }
func (p *benchProvider) Refresh(context.Context) error                   { return nil }
func (p *benchProvider) NodeGroups() []snapshot.NodeGroup                { return []snapshot.NodeGroup{p.group} }
func (p *benchProvider) NodeGroupForNode(*v1.Node) (string, error)       { return p.group.ID, nil }
func (p *benchProvider) IncreaseSize(context.Context, string, int) error { return nil }
func (p *benchProvider) DeleteNodes(context.Context, string, []*v1.Node) error {
	return nil
}
func (p *benchProvider) DecreaseTargetSize(context.Context, string, int) error { return nil }

// recordingActuator counts what it is asked and calls removals off at
// once, so that the next loop plans them again.
type recordingActuator struct {
	outcomes          *actuation.Queue
	nodesUp, removals int
}

func (r *recordingActuator) DecreaseTarget(context.Context, autoscaler.DecreaseTarget) error {
	return nil
}
func (r *recordingActuator) DeleteInstances(context.Context, autoscaler.DeleteInstances) error {
	return nil
}
func (r *recordingActuator) ScaleUp(_ context.Context, a autoscaler.ScaleUp) error {
	r.nodesUp += a.Delta
	return nil
}
func (r *recordingActuator) SoftTaint(context.Context, autoscaler.SoftTaint) error     { return nil }
func (r *recordingActuator) SoftUntaint(context.Context, autoscaler.SoftUntaint) error { return nil }
func (r *recordingActuator) Cordon(context.Context, autoscaler.Cordon) error           { return nil }
func (r *recordingActuator) Uncordon(context.Context, autoscaler.Uncordon) error       { return nil }
func (r *recordingActuator) SetRequestConditions(context.Context, autoscaler.SetRequestConditions) error {
	return nil
}
func (r *recordingActuator) RemoveNodes(_ context.Context, a autoscaler.RemoveNodes) {
	r.removals += len(a.Removals)
	for _, rm := range a.Removals {
		r.outcomes.Hold(autoscaler.RemovalAborted{Node: rm.Node, Group: rm.Group, Reason: "benchmark"})
	}
}

// benchController starts a controller's informers on objs and waits for
// them; the returned actuator records the actions and stop ends the
// informers.
func benchController(b *testing.B, cp cloudprovider.CloudProvider, o Options, objs []runtime.Object) (c *Controller, rec *recordingActuator, stop func()) {
	b.Helper()
	return benchControllerOn(b, fake.NewClientset(objs...), cp, o)
}

// benchControllerOn is benchController over a clientset the caller made.
func benchControllerOn(b *testing.B, client *fake.Clientset, cp cloudprovider.CloudProvider, o Options) (c *Controller, rec *recordingActuator, stop func()) {
	b.Helper()
	o.Address, o.LeaderElection.Enabled, o.Logger = "", false, quiet()
	o.Clock = clocktesting.NewFakeClock(t0)
	c, err := New(client, cp, o)
	if err != nil {
		b.Fatal(err)
	}
	rec = &recordingActuator{outcomes: c.outcomes}
	c.actuator = rec
	// Events are built as in a live loop but not posted: the fake
	// clientset's tracker would take the CPU an API server spends on them.
	c.recorder = &record.FakeRecorder{}
	c.events.recorder = c.recorder
	ctx, cancel := context.WithCancel(context.Background())
	c.factory.Start(ctx.Done())
	synced := make([]cache.InformerSynced, len(c.listers.informers))
	for i, inf := range c.listers.informers {
		synced[i] = inf.informer.HasSynced
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		cancel()
		b.Fatal("caches did not sync")
	}
	return c, rec, func() { cancel(); c.factory.Shutdown() }
}

func markedUnschedulable(p *v1.Pod) *v1.Pod {
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	return p
}

func replicaSetPod(p *v1.Pod) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("web"), Controller: &yes}}
	return p
}

// BenchmarkLoopScaleUp50kPods: upstream's scale-up shape, 50,000 pending
// pods created one by one without a controller, each 1/50 of a node, one
// empty group: 1,000 new nodes.
func BenchmarkLoopScaleUp50kPods(b *testing.B) {
	g := builder.NodeGroup("ng").Max(2000).Template(builder.Node("t").CPU("50").Memory("50Gi").Pods(110).Build()).Build()
	objs := make([]runtime.Object, 0, 50000)
	for i := 0; i < 50000; i++ {
		objs = append(objs, markedUnschedulable(builder.Pod(fmt.Sprintf("p-%05d", i)).CPU("1").Memory("1Gi").Build()))
	}
	o := DefaultOptions()
	o.Autoscaler.ScaleUp.Expander = "least-waste"
	runLoops(b, g, o, objs, func(rec *recordingActuator) {
		if rec.nodesUp != 1000 {
			b.Fatalf("scaled up %d nodes, want 1000", rec.nodesUp)
		}
		rec.nodesUp = 0
	})
}

// BenchmarkLoopScaleDown2000Nodes: upstream's scale-down shape, 2,000
// nodes at 40% (40 ReplicaSet pods of 1% each), unneeded time 0, no
// parallelism or candidate limit: 1,200 nodes removed.
func BenchmarkLoopScaleDown2000Nodes(b *testing.B) {
	g := builder.NodeGroup("pool").Max(2000).Target(2000).Build()
	objs := make([]runtime.Object, 0, 82000)
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("node-%05d", i)
		objs = append(objs, builder.Node(name).CPU("100").Memory("100Gi").Pods(110).Build())
		for j := 0; j < 40; j++ {
			objs = append(objs, replicaSetPod(builder.Pod(fmt.Sprintf("web-%05d-%02d", i, j)).CPU("1").Memory("1Gi").Label("app", "web").OnNode(name).Build()))
		}
	}
	o := DefaultOptions()
	d := &o.Autoscaler.ScaleDown
	d.UnneededTime, d.MaxScaleDownParallelism, d.MaxDrainParallelism, d.NonEmptyCandidatesCount, d.MaxBulkSoftTaintCount = 0, 0, 0, 0, 0
	runLoops(b, g, o, objs, func(rec *recordingActuator) {
		if rec.removals != 1200 {
			b.Fatalf("removed %d nodes, want 1200", rec.removals)
		}
		rec.removals = 0
	})
}

// runLoops times whole loops two ways. first-loop is upstream's RunOnce
// scope: a new autoscaler on synced caches, its first loop timed (the
// snapshot built from nothing). steady is every later loop: the same
// cluster decided again by a controller that has seen it. check runs
// after each loop.
func runLoops(b *testing.B, g snapshot.NodeGroup, o Options, objs []runtime.Object, check func(*recordingActuator)) {
	ctx := context.Background()
	b.Run("first-loop", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c, rec, stop := benchController(b, &benchProvider{group: g}, o, objs)
			goruntime.GC()
			b.StartTimer()
			if err := c.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			check(rec)
			stop()
		}
	})
	b.Run("steady", func(b *testing.B) {
		c, rec, stop := benchController(b, &benchProvider{group: g}, o, objs)
		defer stop()
		if err := c.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
		check(rec)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := c.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			check(rec)
			b.StartTimer()
		}
	})
}
