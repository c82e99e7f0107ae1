package autoscaler_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func owned(p *v1.Pod) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID("rs"), Controller: &yes}}
	return p
}

func gpuTemplate() *v1.Node {
	return builder.Node("gpu-t").CPU("32").Memory("128Gi").GPU(1).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
}

func newAutoscaler(t *testing.T) *autoscaler.Autoscaler {
	t.Helper()
	a, err := autoscaler.New(autoscaler.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func setGroup(t *testing.T, s *snapshot.Snapshot, id string, target int, tmpl *v1.Node) {
	t.Helper()
	if err := s.SetNodeGroup(builder.NodeGroup(id).Max(10).Target(target).Template(tmpl).Build()); err != nil {
		t.Fatal(err)
	}
}

// The life of one GPU node: ordered once for a pending GPU pod, counted as
// upcoming while its device plugin starts, used, and removed after it has
// been idle for the unneeded time.
func TestGPUNodeLifecycle(t *testing.T) {
	a := newAutoscaler(t)
	s := snapshot.New()
	setGroup(t, s, "gpu", 0, gpuTemplate())
	pod := owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())

	plan, err := a.RunOnce(autoscaler.Input{Now: t0, Snapshot: s, Pending: []*v1.Pod{pod}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.ScaleUp.ScaleUps) != 1 || plan.ScaleUp.ScaleUps[0].Delta != 1 || plan.ScaleDownSkipped == "" {
		t.Fatalf("first loop: %+v, skipped %q; want gpu+1 and no scale-down", plan.ScaleUp.ScaleUps, plan.ScaleDownSkipped)
	}
	setGroup(t, s, "gpu", 1, gpuTemplate())
	a.State().RecordScaleUp("gpu", 1, t0)

	// Two minutes later the node registers without GPUs: no second node.
	node := builder.Node("gpu-1").CPU("32").Memory("128Gi").Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
	node.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Minute))
	if err := s.AddNodeInGroup(node, "gpu"); err != nil {
		t.Fatal(err)
	}
	plan, _ = a.RunOnce(autoscaler.Input{Now: t0.Add(3 * time.Minute), Snapshot: s, Pending: []*v1.Pod{pod}})
	if len(plan.ScaleUp.ScaleUps) != 0 {
		t.Fatalf("ordered a second node while the first waited for its GPUs: %+v", plan.ScaleUp.ScaleUps)
	}
	for _, k := range plan.ScaleDown.Delete {
		t.Fatalf("removed %s while a pending pod waits for it", k.Node)
	}

	// GPUs advertised, the pod runs; it ends an hour later.
	_ = s.RemoveNode("gpu-1")
	ready := node.DeepCopy()
	ready.Status.Allocatable["nvidia.com/gpu"] = *builder.Node("x").GPU(1).Build().Status.Allocatable.Name("nvidia.com/gpu", "")
	if err := s.AddNodeInGroup(ready, "gpu"); err != nil {
		t.Fatal(err)
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "gpu-1"
	_ = s.AddPod(bound)
	plan, _ = a.RunOnce(autoscaler.Input{Now: t0.Add(30 * time.Minute), Snapshot: s})
	if len(plan.ScaleDown.Delete) != 0 {
		t.Fatalf("removed the node of a running GPU pod: %+v", plan.ScaleDown.Delete)
	}
	_ = s.RemovePod("default", "train")

	// Idle: unneeded from 61m, removed once 10 minutes have passed.
	var removedAt time.Duration
	for m := 61; m <= 75; m++ {
		plan, _ = a.RunOnce(autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if len(plan.ScaleDown.Delete) > 0 {
			removedAt = time.Duration(m) * time.Minute
			break
		}
	}
	if removedAt != 71*time.Minute {
		t.Fatalf("idle GPU node removed at %v, want 71m (10m after it became unneeded)", removedAt)
	}
}

// A pending pod that fits on an underused node keeps that node: scale-down
// must not give away the room the scheduler is about to use.
func TestPendingPodKeepsTheNodeItWillUse(t *testing.T) {
	removals := func(pending []*v1.Pod) []string {
		a := newAutoscaler(t)
		s := snapshot.New()
		setGroup(t, s, "cpu", 2, builder.Node("t").CPU("4").Build())
		for i := 1; i <= 2; i++ {
			if err := s.AddNodeInGroup(builder.Node(fmt.Sprintf("n%d", i)).CPU("4").Build(), "cpu"); err != nil {
				t.Fatal(err)
			}
		}
		_ = s.AddPod(owned(builder.Pod("small").CPU("1").OnNode("n1").Build()))
		for m := 0; m <= 30; m++ {
			plan, err := a.RunOnce(autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, Pending: pending})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.ScaleDown.Delete) > 0 {
				return []string{plan.ScaleDown.Delete[0].Node}
			}
		}
		return nil
	}
	// Without pending pods the empty n2 goes.
	if got := removals(nil); fmt.Sprint(got) != "[n2]" {
		t.Fatalf("without pending pods removed %v, want [n2]", got)
	}
	// "big" fits only n2 (n1 has 3 cpu free), and then "small" cannot move
	// there: both nodes stay.
	if got := removals([]*v1.Pod{owned(builder.Pod("big").CPU("3500m").Build())}); len(got) != 0 {
		t.Fatalf("removed %v while a pending pod needs it", got)
	}
}

func TestScaleDownDisabled(t *testing.T) {
	o := autoscaler.DefaultOptions()
	o.ScaleDownEnabled = false
	a, err := autoscaler.New(o)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot.New()
	setGroup(t, s, "cpu", 1, builder.Node("t").Build())
	_ = s.AddNodeInGroup(builder.Node("idle").Build(), "cpu")
	plan, _ := a.RunOnce(autoscaler.Input{Now: t0.Add(time.Hour), Snapshot: s})
	if plan.ScaleDownSkipped == "" || len(plan.ScaleDown.Delete) != 0 {
		t.Fatalf("scale-down ran while disabled: %+v", plan)
	}
}
