package autoscaler_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// A scale-up's status says when it times out: the group's own max node
// provision time where its options set one, else the flag's.
func TestScaleUpStatusCarriesItsDeadline(t *testing.T) {
	s := snapshot.New()
	tmpl := builder.Node("t").CPU("4").Memory("16Gi").Build()
	five := 5 * time.Minute
	fast := builder.NodeGroup("fast").Max(3).Template(tmpl).Build()
	fast.Options = &snapshot.GroupOptions{MaxNodeProvisionTime: &five}
	for _, g := range []snapshot.NodeGroup{fast, builder.NodeGroup("slow").Max(3).Template(tmpl).Build()} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	for group, want := range map[string]time.Duration{"fast": five, "slow": 15 * time.Minute} {
		a := newAutoscaler(t, func(o *autoscaler.Options) {
			o.ScaleUp.Expander = "priority"
			o.ScaleUp.Priorities = mustPriorities(t, "10:\n  - ^"+group+"$\n")
		})
		plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: []*v1.Pod{owned(builder.Pod("p").CPU("3").Build())}})
		if len(plan.Status.ScaleUps) != 1 || plan.Status.ScaleUps[0].Group != group {
			t.Fatalf("scale-ups %+v, want one of %s", plan.Status.ScaleUps, group)
		}
		if got := plan.Status.ScaleUps[0].Deadline; !got.Equal(t0.Add(want)) {
			t.Errorf("%s: deadline %s, want %s", group, got, t0.Add(want))
		}
	}
}

// One definition of a ready node for the whole loop: a Ready node still
// carrying a start-up taint is upcoming to scale-up, so scale-down judges it
// as unready too (--scale-down-unready-time), and does not remove it after
// the ready nodes' unneeded time.
func TestStartingNodeIsUnreadyToScaleDown(t *testing.T) {
	s := snapshot.New()
	tmpl := builder.Node("t").CPU("4").Memory("16Gi").Build()
	setGroup(t, s, "pool", 1, tmpl)
	n := node("fresh", t0)
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "startup-taint.cluster-autoscaler.kubernetes.io/agent", Effect: v1.TaintEffectNoSchedule})
	if err := s.AddNodeInGroup(n, "pool"); err != nil {
		t.Fatal(err)
	}
	g := *s.NodeGroup("pool")
	g.MinSize = 0
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	a := newAutoscaler(t)
	for m := 0; m <= 19; m++ {
		plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if got := only(plan, "remove"); got != "" {
			t.Fatalf("at %dm %q: a node still starting is removed only after --scale-down-unready-time", m, got)
		}
	}
	if got := only(step(t, a, autoscaler.Input{Now: t0.Add(20 * time.Minute), Snapshot: s}), "remove"); got != "remove fresh" {
		t.Errorf("at 20m %q, want the node that never finished starting removed", got)
	}
}

// A group found outside its bounds when autoscaling starts is left there
// until a change is needed, as upstream without
// --enforce-node-group-min-size: below its minimum nothing is added for
// the minimum's sake and nothing removed; above its maximum, idle nodes go
// as anywhere else, and no pending pod makes it grow further.
func TestGroupOutsideItsBoundsWaitsForAChange(t *testing.T) {
	s := snapshot.New()
	tmpl := builder.Node("t").CPU("4").Memory("16Gi").Build()
	below := builder.NodeGroup("below").Min(3).Max(5).Target(1).Template(tmpl).Build()
	above := builder.NodeGroup("above").Min(0).Max(1).Target(2).Template(tmpl).Build()
	for _, g := range []snapshot.NodeGroup{below, above} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	for name, group := range map[string]string{"b1": "below", "a1": "above", "a2": "above"} {
		if err := s.AddNodeInGroup(node(name, t0.Add(-time.Hour)), group); err != nil {
			t.Fatal(err)
		}
	}
	a := newAutoscaler(t)
	var removed []string
	for m := 0; m <= 11; m++ {
		plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
		if got := only(plan, "scale-up"); got != "" {
			t.Fatalf("at %dm %q: no pod needs a node", m, got)
		}
		if got := only(plan, "remove"); got != "" {
			removed = append(removed, fmt.Sprintf("%dm: %s", m, got))
		}
	}
	if len(removed) != 1 || removed[0] != "10m: remove a1,a2" {
		t.Errorf("removals %q, want the idle nodes of the group above its maximum removed after the unneeded time, none of the group below its minimum", removed)
	}
}
