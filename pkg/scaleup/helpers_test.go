package scaleup_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// world is a test cluster: groups with templates, nodes, running pods.
type world struct {
	t     *testing.T
	snap  *snapshot.Snapshot
	state *clusterstate.State
	// shrinks are the target decreases the last plan's reconciliation made.
	shrinks []clusterstate.Shrink
	ds      []*appsv1.DaemonSet
}

func newWorld(t *testing.T) *world {
	return &world{t: t, snap: snapshot.New(), state: clusterstate.New(clusterstate.DefaultOptions())}
}

func (w *world) group(b *builder.GroupBuilder) *world {
	w.t.Helper()
	if err := w.snap.SetNodeGroup(b.Build()); err != nil {
		w.t.Fatal(err)
	}
	return w
}

// node registers a node of group created at created.
func (w *world) node(group string, n *v1.Node, created time.Time) *world {
	w.t.Helper()
	n.CreationTimestamp = metav1.NewTime(created)
	if err := w.snap.AddNodeInGroup(n, group); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *world) pod(p *v1.Pod) *world {
	w.t.Helper()
	if err := w.snap.AddPod(p); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *world) plan(opts scaleup.Options, now time.Time, pending ...*v1.Pod) scaleup.Plan {
	w.t.Helper()
	p, err := scaleup.NewPlanner(opts)
	if err != nil {
		w.t.Fatal(err)
	}
	// As the loop does: reconcile, give back what timed out, then plan.
	w.shrinks = w.state.Update(w.snap, now).Shrinks
	for _, s := range w.shrinks {
		g := *w.snap.NodeGroup(s.Group)
		g.TargetSize -= s.Delta
		if err := w.snap.SetNodeGroup(g); err != nil {
			w.t.Fatal(err)
		}
	}
	plan, err := p.Plan(scaleup.Input{Now: now, Snapshot: w.snap, Pending: pending, DaemonSets: w.ds, State: w.state})
	if err != nil {
		w.t.Fatal(err)
	}
	return plan
}

// apply does what the actuator would: raise targets and record the
// scale-ups in the state.
func (w *world) apply(plan scaleup.Plan, now time.Time) {
	w.t.Helper()
	for _, su := range plan.ScaleUps {
		g := *w.snap.NodeGroup(su.Group)
		g.TargetSize = su.NewTarget
		if err := w.snap.SetNodeGroup(g); err != nil {
			w.t.Fatal(err)
		}
		w.state.RecordScaleUp(su.Group, su.Delta, now)
	}
}

// summary renders scale-ups as "group+delta" sorted, e.g. "gpu+1 cpu+2".
func summary(p scaleup.Plan) string {
	var parts []string
	for _, su := range p.ScaleUps {
		parts = append(parts, fmt.Sprintf("%s+%d", su.Group, su.Delta))
	}
	return strings.Join(parts, " ")
}

func replicas(n int, mk func(i int) *v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, mk(i))
	}
	return out
}

// owned marks a pod as a ReplicaSet's.
func owned(p *v1.Pod, rs string) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: types.UID("uid-" + rs), Controller: &yes}}
	return p
}

func cpuTemplate(name string) *v1.Node {
	return builder.Node(name).CPU("8").Memory("32Gi").Build()
}

func gpuTemplate(name string, gpus int64) *v1.Node {
	return builder.Node(name).CPU("32").Memory("128Gi").GPU(gpus).
		Label("k8s.amazonaws.com/accelerator", "nvidia-a10g").
		Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
}

func gpuPod(name string, gpus int64) *v1.Pod {
	return builder.Pod(name).CPU("2").Memory("8Gi").GPU(gpus).Toleration("nvidia.com/gpu").Build()
}

func daemonSet(name, cpu string) *appsv1.DaemonSet {
	p := builder.Pod(name).CPU(cpu).Build()
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec:       appsv1.DaemonSetSpec{Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: p.Spec}},
	}
}
