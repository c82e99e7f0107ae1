package scaleup_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

func withPriority(p *v1.Pod, prio int32) *v1.Pod {
	p.Spec.Priority = &prio
	return p
}

// overprovisioned: one node of the cpu group (8 cpu) full of a pause pod.
func overprovisioned(t *testing.T, pausePriority int32) *world {
	w := newWorld(t).group(builder.NodeGroup("cpu").Target(1).Template(cpuTemplate("c")))
	w.node("cpu", builder.Node("n1").CPU("8").Memory("32Gi").Build(), t0.Add(-time.Hour))
	pause := owned(withPriority(builder.Pod("pause").CPU("7").OnNode("n1").Build(), pausePriority), "overprovisioning")
	return w.pod(pause)
}

// A pod the scheduler nominated onto a node (it preempts the pause pod
// there) counts as fitting on it: no node is bought for it.
func TestNominatedPreemptorOrdersNoNode(t *testing.T) {
	w := overprovisioned(t, -1) // the upstream pattern: above the cutoff
	web := owned(builder.Pod("web").CPU("6").Build(), "web")
	web.Status.NominatedNodeName = "n1"
	plan := w.plan(opts("random"), t0, web)
	if got := summary(plan); got != "" {
		t.Fatalf("scale-ups %q for a nominated preemptor, want none", got)
	}
	if len(plan.WillSchedule) != 1 || plan.Placements[0] != "n1" {
		t.Errorf("will schedule %d at %v, want web on n1", len(plan.WillSchedule), plan.Placements)
	}
}

// The pause pod the preemption evicts comes back pending: it is above the
// cutoff, so it orders a node and the overprovisioning is restored, while
// the preemptor still buys none.
func TestEvictedPausePodRestoresOverprovisioning(t *testing.T) {
	w := overprovisioned(t, -1)
	web := owned(builder.Pod("web").CPU("6").Build(), "web")
	web.Status.NominatedNodeName = "n1"
	again := owned(withPriority(builder.Pod("pause-2").CPU("7").Build(), -1), "overprovisioning")
	plan := w.plan(opts("random"), t0, web, again)
	if got := summary(plan); got != "cpu+1" {
		t.Fatalf("scale-ups %q, want one node for the pause pod (and none for web)", got)
	}
	if len(plan.Triggered) != 1 || plan.Triggered[0].Name != "pause-2" {
		t.Errorf("triggered %v, want the pause pod", plan.Triggered)
	}
}

// Room held by expendable pods (below the cutoff) is free: a pending pod
// that fits there orders nothing, and the expendable pods themselves never
// order a node.
func TestRoomOfExpendablePodsIsFree(t *testing.T) {
	w := overprovisioned(t, -100)
	web := owned(builder.Pod("web").CPU("6").Build(), "web")
	evicted := owned(withPriority(builder.Pod("pause-2").CPU("7").Build(), -100), "overprovisioning")
	plan := w.plan(opts("random"), t0, web, evicted)
	if got := summary(plan); got != "" {
		t.Fatalf("scale-ups %q, want none: web fits in the expendable pod's room", got)
	}
	if len(plan.WillSchedule) != 1 || plan.WillSchedule[0].Name != "web" || plan.Placements[0] != "n1" {
		t.Errorf("will schedule %v at %v, want web on n1", plan.WillSchedule, plan.Placements)
	}
	// The same pod with the pause pod above the cutoff needs a node.
	w = overprovisioned(t, -1)
	if got := summary(w.plan(opts("random"), t0, owned(builder.Pod("web").CPU("6").Build(), "web"))); got != "cpu+1" {
		t.Errorf("scale-ups %q beside a pause pod above the cutoff, want cpu+1", got)
	}
}

// A nomination onto a node that is gone counts for nothing.
func TestNominationOntoAGoneNodeIsIgnored(t *testing.T) {
	w := overprovisioned(t, -1)
	web := owned(builder.Pod("web").CPU("6").Build(), "web")
	web.Status.NominatedNodeName = "gone"
	if got := summary(w.plan(opts("random"), t0, web)); got != "cpu+1" {
		t.Errorf("scale-ups %q, want cpu+1", got)
	}
}

// Pods asking for more than any node has free skip the scan of the nodes
// and still get their scale-up; pods within the bound are placed as ever.
func TestPodsAboveEveryNodesRoom(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("gpu").Target(2).Template(gpuTemplate("t", 4)))
	for _, n := range []string{"g1", "g2"} {
		w.node("gpu", builder.Node(n).CPU("32").Memory("128Gi").GPU(4).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build(), t0.Add(-time.Hour))
		w.pod(owned(builder.Pod("busy-"+n).GPU(2).Toleration("nvidia.com/gpu").OnNode(n).Build(), "busy"))
	}
	big := owned(gpuPod("big", 3), "big")
	small := owned(gpuPod("small", 2), "small")
	plan := w.plan(opts("random"), t0, big, small)
	if got := summary(plan); got != "gpu+1" {
		t.Fatalf("scale-ups %q, want one node for the 3-GPU pod", got)
	}
	if len(plan.WillSchedule) != 1 || plan.WillSchedule[0].Name != "small" {
		t.Errorf("will schedule %v, want the 2-GPU pod on a node with 2 free", plan.WillSchedule)
	}
	if len(plan.Triggered) != 1 || plan.Triggered[0].Name != "big" {
		t.Errorf("triggered %v, want big", plan.Triggered)
	}
}
