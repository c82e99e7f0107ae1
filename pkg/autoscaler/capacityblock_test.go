package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// blockCluster has a cheap group backed by a capacity block that ends at
// end, with one busy node, and a dearer on-demand group; the price
// expander chooses.
func blockCluster(t *testing.T, end time.Time) (*autoscaler.Autoscaler, *snapshot.Snapshot) {
	t.Helper()
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	s := snapshot.New()
	block := gpuGroup("a-block", "p5.48xlarge", "us-east-1a", 1, false)
	block.Options = &snapshot.GroupOptions{CapacityBlockEnd: &end}
	for _, g := range []snapshot.NodeGroup{block, gpuGroup("c-on-demand", "p4d.24xlarge", "us-east-1a", 3, false)} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	setTarget(t, s, "a-block", 1)
	n := s.NodeGroup("a-block").Template.DeepCopy()
	n.Name = "block-1"
	n.CreationTimestamp.Time = t0.Add(-time.Hour)
	if err := s.AddNodeInGroup(n, "a-block"); err != nil {
		t.Fatal(err)
	}
	p := owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").OnNode("block-1").Build())
	if err := s.AddPod(p); err != nil {
		t.Fatal(err)
	}
	return a, s
}

// Within the lead before its capacity block ends, a group's nodes are
// drained by the time the cloud starts terminating them, their pods'
// replacement is ordered on another group in the same loop, and the group
// is not grown for new pods although it is the cheapest; status names the
// block and its end.
func TestCapacityBlockEndDrainsAheadAndOrdersElsewhere(t *testing.T) {
	end := t0.Add(time.Hour)
	a, s := blockCluster(t, end)
	if got := summary(step(t, a, autoscaler.Input{Now: t0, Snapshot: s})); got != "" {
		t.Fatalf("an hour before the end: %q, want nothing", got)
	}
	pending := builder.Pod("new").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()
	early := step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Second), Snapshot: s, Pending: []*v1.Pod{pending}})
	if got := summary(early); got != "scale-up a-block+1" {
		t.Fatalf("before the lead, a new pod: %q, want the cheap block group grown", got)
	}

	a, s = blockCluster(t, end)
	now := end.Add(-35 * time.Minute) // within the default 40m lead
	plan := step(t, a, autoscaler.Input{Now: now, Snapshot: s, Pending: []*v1.Pod{pending}})
	if got := summary(plan); got != "remove block-1; scale-up c-on-demand+2" {
		t.Fatalf("within the lead: %q, want block-1 drained and both pods placed on demand", got)
	}
	rm := plan.Actions[0].(autoscaler.RemoveNodes).Removals[0]
	if !rm.Deadline.Equal(end.Add(-autoscaler.CapacityBlockTermination)) || len(rm.Evict) != 1 || !strings.Contains(rm.Interruption, "capacity block") {
		t.Errorf("removal %+v: want the pod evicted by the time the cloud starts terminating", rm)
	}
	if g := groupStatus(plan, "a-block").ScaleUp; g.State != status.ActivityBackoff || g.Reason != autoscaler.ReasonCapacityBlockEnding ||
		!strings.Contains(g.Message, end.Format(time.RFC3339)) {
		t.Errorf("a-block %+v: want backed off until its block ends, the end named", g)
	}
	if len(plan.Status.Nodes) != 1 || plan.Status.Nodes[0].Reason != autoscaler.ReasonCapacityBlockEnding ||
		!strings.Contains(plan.Status.Nodes[0].Message, end.Format(time.RFC3339)) {
		t.Errorf("status nodes %+v: want block-1 removing, the block's end named", plan.Status.Nodes)
	}

	off := newAutoscaler(t, func(o *autoscaler.Options) {
		o.ScaleUp.Expander = "price"
		o.Interruption.CapacityBlockLead = 0
	})
	_, s = blockCluster(t, end)
	if got := summary(step(t, off, autoscaler.Input{Now: now, Snapshot: s})); got != "" {
		t.Errorf("with no lead: %q, want nothing", got)
	}
}

// A dear group with two reserved nodes and a cheap spot group, four GPU
// pods pending: the reserved group is grown to its reservation first
// (those nodes are paid for), and the pods left over go to the cheapest
// group in the next loop, the reserved group then costing its price.
func TestReservedNodesAreUsedFirstThenTheCheapest(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	s := snapshot.New()
	reserved := gpuGroup("b-reserved", "p5.48xlarge", "us-east-1a", 3, false)
	two := 2
	reserved.Options = &snapshot.GroupOptions{ReservedNodes: &two}
	for _, g := range []snapshot.NodeGroup{gpuGroup("a-spot", "p5.48xlarge", "us-east-1b", 1, true), reserved} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	var pending []*v1.Pod
	for _, name := range []string{"p1", "p2", "p3", "p4"} {
		pending = append(pending, owned(builder.Pod(name).CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()))
	}
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
	if got := summary(plan); got != "scale-up b-reserved+2" {
		t.Fatalf("first loop: %q, want the reserved group grown to its reservation", got)
	}
	setTarget(t, s, "b-reserved", 2)
	plan = step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Second), Snapshot: s, Pending: pending, Outcomes: accepted(plan, t0)})
	if got := summary(plan); got != "scale-up a-spot+2" {
		t.Errorf("next loop: %q, want the pods left over on the cheap spot group", got)
	}
}

// A loop on unchanged inputs is due when a block's drain lead begins: a
// shell that sleeps until NextDecisionAt (the simulator) must not sleep
// past it.
func TestNextDecisionAtBlockLeadStart(t *testing.T) {
	end := t0.Add(3 * time.Hour)
	a, s := blockCluster(t, end)
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s})
	if want := end.Add(-40 * time.Minute); !plan.NextDecisionAt.Equal(want) {
		t.Errorf("NextDecisionAt %s, want %s: the default 40m lead beginning", plan.NextDecisionAt, want)
	}
}

// Once its capacity block has ended a group is never grown, drain lead or
// not: the cloud would launch none of its nodes.
func TestGroupOfAnEndedBlockIsNotGrown(t *testing.T) {
	end := t0.Add(-time.Minute)
	for _, lead := range []time.Duration{0, 40 * time.Minute} {
		a := newAutoscaler(t, func(o *autoscaler.Options) {
			o.ScaleUp.Expander = "price"
			o.Interruption.CapacityBlockLead = lead
		})
		_, s := blockCluster(t, end)
		pending := builder.Pod("new").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()
		got := summary(step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: []*v1.Pod{pending}}))
		if strings.Contains(got, "scale-up a-block") || !strings.Contains(got, "scale-up c-on-demand") {
			t.Errorf("lead %s, the block ended a minute ago: %q, want the pod placed on demand", lead, got)
		}
	}
}
