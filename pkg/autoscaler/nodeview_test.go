package autoscaler_test

import (
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
