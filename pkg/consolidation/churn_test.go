package consolidation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/disruption"
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

// TestMoveMustPayForItsEvictions: a move's hourly saving must be at least
// MinSavingsPerPod for each pod it evicts. A $0.77/h CPU node whose 30
// pods fit on another node goes at $0.02 a pod, not at $0.03; a replacement
// that saves $0.30/h for 8 pods goes at $0.03 a pod, not at $0.04.
func TestMoveMustPayForItsEvictions(t *testing.T) {
	deletion := func() *cluster {
		c := newCluster(t).group("cpu", cpuNode("16", "64Gi"), 0.77)
		var pods []*v1.Pod
		for k := 0; k < 30; k++ {
			pods = append(pods, cpuPod(fmt.Sprintf("web-%d", k), "100m"))
		}
		busy := cpuNode("16", "64Gi") // stays: its pod fits on light, but it may not go
		busy.Name, busy.Labels[v1.LabelHostname] = "busy", "busy"
		busy.Annotations = map[string]string{disruption.AnnotationScaleDownDisabled: "true"}
		return c.nodeObj(busy, "cpu", cpuPod("base", "8")).node("light", "cpu", pods...)
	}
	replacement := func() *cluster {
		c := newCluster(t).group("big", cpuNode("16", "64Gi"), 1.00).group("small", cpuNode("8", "32Gi"), 0.70)
		var pods []*v1.Pod
		for k := 0; k < 8; k++ {
			pods = append(pods, cpuPod(fmt.Sprintf("web-%d", k), "500m"))
		}
		return c.node("n", "big", pods...)
	}
	for _, tc := range []struct {
		name     string
		c        func() *cluster
		perPod   float64
		wantMove bool
	}{
		{"delete at $0.02 a pod", deletion, 0.02, true},
		{"delete below $0.03 a pod", deletion, 0.03, false},
		{"replace at $0.03 a pod", replacement, 0.03, true},
		{"replace below $0.04 a pod", replacement, 0.04, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := immediate()
			o.MinSavingsPerPod = tc.perPod
			p := plan(t, tc.c(), o, nil)
			moved := 0
			for _, m := range p.Moves {
				moved += len(m.Evict)
			}
			if got := moved > 0; got != tc.wantMove {
				t.Fatalf("pods moved %v, want %v:%s", got, tc.wantMove, summary(p))
			}
			if !tc.wantMove {
				for _, k := range p.Kept {
					if k.Reason == consolidation.ReasonNoCheaperPlacement && !strings.Contains(k.Message, "--consolidation-min-savings-per-pod") {
						t.Errorf("kept %s without naming the per-pod saving: %s", k.Node, k.Message)
					}
				}
			}
		})
	}
}
