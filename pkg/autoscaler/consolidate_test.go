package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Two 1-GPU nodes at $3/h each hold one GPU pod: one 2-GPU node at $4/h
// takes both for a third less. (No disruption budget: the default 10% of
// a 2-node group lets one node move at a time.)
func replaceable(t *testing.T) (*autoscaler.Autoscaler, *snapshot.Snapshot) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.Consolidation.Enabled, o.Consolidation.Budgets = true, nil })
	s := snapshot.New()
	one := builder.Node("t1").CPU("8").Memory("32Gi").GPU(1).Build()
	two := builder.Node("t2").CPU("16").Memory("64Gi").GPU(2).Build()
	for _, g := range []snapshot.NodeGroup{
		builder.NodeGroup("g1").Max(4).Target(2).Price(3).Template(one).Build(),
		builder.NodeGroup("g2").Max(4).Price(4).Template(two).Build(),
	} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"n1", "n2"} {
		n := builder.Node(name).CPU("8").Memory("32Gi").GPU(1).Build()
		n.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		if err := s.AddNodeInGroup(n, "g1"); err != nil {
			t.Fatal(err)
		}
		if err := s.AddPod(owned(builder.Pod("train-" + name).CPU("2").GPU(1).OnNode(name).Build())); err != nil {
			t.Fatal(err)
		}
	}
	return a, s
}

// A replacement launches its node and cordons the old ones, drains them
// only once the new node is ready, and is carried by the status.
func TestConsolidationReplacesOnceTheNewNodeIsReady(t *testing.T) {
	a, s := replaceable(t)
	var plan autoscaler.Plan
	for m := 0; m <= 10; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if m < 10 && summary(plan) != "" {
			t.Fatalf("at %dm, before the stable time: %q", m, summary(plan))
		}
	}
	if got := summary(plan); got != "scale-up g2+1; cordon n1,n2" {
		t.Fatalf("at 10m %q, want the 2-GPU node launched and the old nodes cordoned", got)
	}
	if c := plan.Status.Consolidation; c == nil || len(c.Replacing) != 1 || len(c.Moves) != 1 {
		t.Fatalf("consolidation status %+v", c)
	}
	setTarget(t, s, "g2", 1)
	out := accepted(plan, t0.Add(10*time.Minute))
	// The new node registers without its GPUs: nothing is drained yet.
	fresh := builder.Node("g2-a").CPU("16").Memory("64Gi").Build()
	fresh.CreationTimestamp = metav1.NewTime(t0.Add(12 * time.Minute))
	if err := s.AddNodeInGroup(fresh, "g2"); err != nil {
		t.Fatal(err)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(13 * time.Minute), Snapshot: s, Outcomes: out})
	if got := summary(plan); got != "" {
		t.Fatalf("drained before the new node advertised its GPUs: %q", got)
	}
	_ = s.RemoveNode("g2-a")
	ready := builder.Node("g2-a").CPU("16").Memory("64Gi").GPU(2).Build()
	ready.CreationTimestamp = fresh.CreationTimestamp
	if err := s.AddNodeInGroup(ready, "g2"); err != nil {
		t.Fatal(err)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(14 * time.Minute), Snapshot: s})
	if got := summary(plan); got != "remove n1,n2" {
		t.Fatalf("with the new node ready %q, want the old nodes drained", got)
	}
}

// A replacement counts the nodes the groups were asked for and that have
// not registered toward --max-nodes-total, as scale-up does: with a third
// g1 node on its way, launching the 2-GPU node would make 4 against 3.
func TestReplacementCountsNodesOnTheirWayTowardTheLimits(t *testing.T) {
	for _, tc := range []struct {
		g1Target int
		want     string
	}{
		{g1Target: 2, want: "scale-up g2+1; cordon n1,n2"},
		{g1Target: 3, want: ""},
	} {
		_, s := replaceable(t)
		a := newAutoscaler(t, func(o *autoscaler.Options) {
			o.Consolidation.Enabled, o.Consolidation.Budgets = true, nil
			o.Limits.MaxNodesTotal = 3
		})
		setTarget(t, s, "g1", tc.g1Target)
		var plan autoscaler.Plan
		for m := 0; m <= 10; m++ {
			plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		}
		if got := summary(plan); got != tc.want {
			t.Errorf("g1 target %d: at 10m %q, want %q", tc.g1Target, got, tc.want)
		}
	}
}

// A replacement whose node never comes is given up: the old nodes are
// uncordoned and keep their pods.
func TestConsolidationGivesUpAReplacement(t *testing.T) {
	a, s := replaceable(t)
	for m := 0; m <= 10; m++ {
		step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
	}
	var plan autoscaler.Plan
	for m := 11; m <= 40; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if only(plan, "uncordon") != "" {
			if m != 40 {
				t.Fatalf("given up at %dm, want 40m (launched at 10m, 15m to provision and 15m to start)", m)
			}
			return
		}
	}
	t.Fatalf("never given up; last plan %q", summary(plan))
}

// Off by default: nodes above the utilization threshold stay.
func TestConsolidationIsOffByDefault(t *testing.T) {
	_, s := replaceable(t)
	a := newAutoscaler(t)
	for m := 0; m <= 30; m++ {
		if plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s}); summary(plan) != "" {
			t.Fatalf("at %dm %q with consolidation off", m, summary(plan))
		}
	}
}

// The replacement group's own max node provision time bounds the wait for
// its new node, as it bounds any scale-up of the group.
func TestReplacementWaitsItsGroupsProvisionTime(t *testing.T) {
	a, s := replaceable(t)
	five := 5 * time.Minute
	g2 := *s.NodeGroup("g2")
	g2.Options = &snapshot.GroupOptions{MaxNodeProvisionTime: &five}
	if err := s.SetNodeGroup(g2); err != nil {
		t.Fatal(err)
	}
	var plan autoscaler.Plan
	for m := 0; m <= 10; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
	}
	if only(plan, "scale-up") != "scale-up g2+1" {
		t.Fatalf("at 10m %q, want the replacement launched", summary(plan))
	}
	for m := 11; m <= 40; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if only(plan, "uncordon") != "" {
			if m != 30 {
				t.Fatalf("given up at %dm, want 30m (launched at 10m, the group's 5m to provision, 15m to start)", m)
			}
			return
		}
	}
	t.Fatalf("never given up; last plan %q", summary(plan))
}

// A pending pod no node group can ever take does not turn consolidation
// off for the whole cluster; one that waits for capacity holds it, and the
// status says why.
func TestUnplaceablePodDoesNotHoldConsolidation(t *testing.T) {
	huge := owned(builder.Pod("huge").CPU("1").GPU(64).Build())
	a, s := replaceable(t)
	var plan autoscaler.Plan
	for m := 0; m <= 10; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, Pending: []*v1.Pod{huge}})
	}
	if got := summary(plan); got != "scale-up g2+1; cordon n1,n2" {
		t.Fatalf("with a pod that fits no group pending: %q, want the replacement", got)
	}
	if c := plan.Status.Consolidation; c == nil || c.Held != "" {
		t.Errorf("consolidation status %+v, want it not held", c)
	}

	a, s = replaceable(t)
	for _, id := range []string{"g1", "g2"} {
		g := *s.NodeGroup(id)
		g.MaxSize = g.TargetSize
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	waiting := owned(builder.Pod("waiting").CPU("2").GPU(1).Build())
	for m := 0; m <= 10; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, Pending: []*v1.Pod{waiting}})
	}
	if got := summary(plan); got != "" {
		t.Fatalf("with a pod waiting for capacity: %q, want nothing moved", got)
	}
	if c := plan.Status.Consolidation; c == nil || c.Held != "PodsWaitForCapacity" || !strings.Contains(c.HeldMessage, "default/waiting") {
		t.Errorf("consolidation status %+v, want it held for the waiting pod", c)
	}
}
