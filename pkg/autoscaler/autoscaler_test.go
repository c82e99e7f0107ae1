package autoscaler_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The life of one GPU node: ordered once for a pending GPU pod, counted as
// upcoming while its device plugin starts, used, and removed after it has
// been idle for the unneeded time.
func TestGPUNodeLifecycle(t *testing.T) {
	a := newAutoscaler(t)
	s := snapshot.New()
	setGroup(t, s, "gpu", 0, gpuTemplate())
	pod := owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())

	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: []*v1.Pod{pod}})
	if got := summary(plan); got != "scale-up gpu+1" || plan.Status.Cluster.ScaleDown.Skipped == "" {
		t.Fatalf("first loop: %q, skipped %q; want gpu+1 and no scale-down", got, plan.Status.Cluster.ScaleDown.Skipped)
	}
	setTarget(t, s, "gpu", 1)
	outcomes := accepted(plan, t0)

	// Two minutes later the node registers without GPUs: no second node.
	node := builder.Node("gpu-1").CPU("32").Memory("128Gi").Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
	node.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Minute))
	if err := s.AddNodeInGroup(node, "gpu"); err != nil {
		t.Fatal(err)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(3 * time.Minute), Snapshot: s, Pending: []*v1.Pod{pod}, Outcomes: outcomes})
	if got := summary(plan); got != "" {
		t.Fatalf("acted while the first node waited for its GPUs: %q", got)
	}
	if c := plan.Status.Cluster.Nodes; c.AwaitingDevices != 1 || c.NotStarted != 1 {
		t.Errorf("node counts %+v, want the node awaiting its devices", c)
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
	plan = step(t, a, autoscaler.Input{Now: t0.Add(30 * time.Minute), Snapshot: s})
	if got := only(plan, "remove"); got != "" {
		t.Fatalf("removed the node of a running GPU pod: %q", got)
	}
	_ = s.RemovePod("default", "train")

	// Idle: unneeded from 61m, removed once 10 minutes have passed; the
	// plan says when to look again.
	var removedAt time.Duration
	for m := 61; m <= 75; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if m == 61 {
			if want := t0.Add(71 * time.Minute); !plan.NextDecisionAt.Equal(want) {
				t.Errorf("next decision after the node became unneeded = %v, want %v", plan.NextDecisionAt, want)
			}
		}
		if only(plan, "remove") != "" {
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
	removals := func(pending []*v1.Pod) string {
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
			plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, Pending: pending})
			if got := only(plan, "remove"); got != "" {
				return got
			}
		}
		return ""
	}
	// Without pending pods the empty n2 goes.
	if got := removals(nil); got != "remove n2" {
		t.Fatalf("without pending pods: %q, want remove n2", got)
	}
	// "big" fits only n2 (n1 has 3 cpu free), and then "small" cannot move
	// there: both nodes stay.
	if got := removals([]*v1.Pod{owned(builder.Pod("big").CPU("3500m").Build())}); got != "" {
		t.Fatalf("%q while a pending pod needs the node", got)
	}
}

func TestScaleDownDisabled(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleDownEnabled = false })
	s := snapshot.New()
	setGroup(t, s, "cpu", 1, builder.Node("t").Build())
	_ = s.AddNodeInGroup(builder.Node("idle").Build(), "cpu")
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Hour), Snapshot: s})
	if plan.Status.Cluster.ScaleDown.Skipped == "" || summary(plan) != "" {
		t.Fatalf("scale-down ran while disabled: %q, %+v", summary(plan), plan.Status.Cluster.ScaleDown)
	}
}

// Step forks the snapshot and reverts it: the caller's cluster is
// unchanged, target decreases included.
func TestStepLeavesTheSnapshotUnchanged(t *testing.T) {
	a := newAutoscaler(t)
	s := snapshot.New()
	setGroup(t, s, "gpu", 1, gpuTemplate())
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Outcomes: []autoscaler.Outcome{
		autoscaler.CreationFailed{Group: "gpu", Count: 1, Class: "OutOfResources", Code: "ZONE_RESOURCE_POOL_EXHAUSTED", At: t0}}})
	if got := summary(plan); got != "decrease gpu-1" {
		t.Fatalf("actions %q, want decrease gpu-1", got)
	}
	if s.NodeGroup("gpu").TargetSize != 1 {
		t.Fatalf("snapshot changed: target %d", s.NodeGroup("gpu").TargetSize)
	}
}
