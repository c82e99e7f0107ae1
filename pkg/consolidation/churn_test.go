package consolidation_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
)

// TestNoTradeBetweenIdenticalNodes: two nodes of one group, one full with a
// pod that has been movable for long, one empty that has only just become
// so. Moving the pod onto the empty node would cost an eviction and leave
// the cluster as deleting the empty node does once its stable time is up,
// so nothing moves: the empty node waits and the full one keeps its pod.
func TestNoTradeBetweenIdenticalNodes(t *testing.T) {
	c := newCluster(t).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10)
	c.node("full", "a100x1", gpuPod("train", 1)).node("empty", "a100x1")
	o := consolidation.GPUCostOptions()
	o.Budgets = nil
	p := plan(t, c, o, func(in *consolidation.Input) {
		in.State = consolidation.State{Since: map[string]time.Time{"full": t0.Add(-time.Hour)}}
	})
	for _, m := range p.Moves {
		if len(m.Evict) > 0 {
			t.Fatalf("a move evicts pods between identical nodes:%s", summary(p))
		}
	}
	if len(p.Waiting) != 1 || len(p.Waiting[0].Nodes) != 1 || p.Waiting[0].Nodes[0] != "empty" {
		t.Fatalf("want the empty node's deletion waiting alone:%s %+v", summary(p), p.Waiting)
	}
	if k := kept(t, p, "full"); k.Reason != consolidation.ReasonNoCheaperPlacement {
		t.Errorf("full kept for %s, want %s", k.Reason, consolidation.ReasonNoCheaperPlacement)
	}
}

// TestWaitingNodeTakesNoPods: of two half-used nodes each could take the
// other's pods, but only one can go. While the first one's deletion waits
// for its stable time, the other is not planned to go too (its pods would
// land on a node on its way out and move twice); once the wait is over the
// first goes and the second takes its pods.
func TestWaitingNodeTakesNoPods(t *testing.T) {
	o := consolidation.GPUCostOptions()
	o.Budgets = nil
	c := halfUsed(t, nil)
	planner := newPlanner(t, o)
	in := c.input(t0)
	p := planner.Plan(in)
	if len(p.Moves) != 0 || len(p.Waiting) != 1 || p.Waiting[0].Nodes[0] != "gpu-a" {
		t.Fatalf("first pass: want gpu-a's deletion waiting alone:%s %+v", summary(p), p.Waiting)
	}
	if _, ok := p.State.Since["gpu-b"]; ok {
		t.Errorf("gpu-b's clock runs although its pods fit only on gpu-a, which waits to go: %v", p.State.Since)
	}
	in.State, in.Now = p.State, t0.Add(o.StableTime)
	if p = planner.Plan(in); len(p.Moves) != 1 || p.Moves[0].Nodes[0].Name != "gpu-a" || p.Moves[0].Evict[0].To != "gpu-b" {
		t.Fatalf("after the stable time: want gpu-a deleted onto gpu-b:%s", summary(p))
	}
}
