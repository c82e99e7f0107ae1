package autoscaler_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Per-group options reach both halves of the loop: the empty node of a
// group whose unneeded time is 2m goes at +2m, the other group's waits the
// cluster's 10m, and NextDecisionAt says when.
func TestGroupWithShorterUnneededTimeGoesSooner(t *testing.T) {
	two := 2 * time.Minute
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleDown.DelayAfterAdd = 0 })
	s := snapshot.New()
	for _, g := range []snapshot.NodeGroup{
		builder.NodeGroup("quick").Max(5).Target(1).Build(),
		builder.NodeGroup("plain").Max(5).Target(1).Build(),
	} {
		if g.ID == "quick" {
			g.Options = &snapshot.GroupOptions{ScaleDownUnneededTime: &two}
		}
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddNodeInGroup(node("q1", t0.Add(-time.Hour)), "quick"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNodeInGroup(node("p1", t0.Add(-time.Hour)), "plain"); err != nil {
		t.Fatal(err)
	}
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s})
	if got := only(plan, "remove"); got != "" {
		t.Fatalf("at once: %q, want nothing removed yet", got)
	}
	if !plan.NextDecisionAt.Equal(t0.Add(two)) {
		t.Errorf("next decision at %v, want +2m", plan.NextDecisionAt)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(two), Snapshot: s})
	if got := only(plan, "remove"); got != "remove q1" {
		t.Fatalf("at +2m: %q, want q1 removed", got)
	}
	if err := s.RemoveNode("q1"); err != nil {
		t.Fatal(err)
	}
	setTarget(t, s, "quick", 0)
	plan = step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Minute), Snapshot: s,
		Outcomes: []autoscaler.Outcome{autoscaler.RemovalDone{Node: "q1", Group: "quick", At: t0.Add(two)}}})
	if got := only(plan, "remove"); got != "remove p1" {
		t.Fatalf("at +10m: %q, want p1 removed", got)
	}
}
