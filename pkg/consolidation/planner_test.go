package consolidation_test

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// halfUsed is two 8-GPU nodes, each with four 1-GPU pods: 50% of their
// GPUs, so no GPU utilization threshold at its default makes either a
// scale-down candidate. The pods of one fit the free GPUs of the other.
func halfUsed(t *testing.T, edit func(*v1.Pod)) *cluster {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77)
	for _, n := range []string{"gpu-a", "gpu-b"} {
		var pods []*v1.Pod
		for k := 0; k < 4; k++ {
			p := gpuPod(n+"-"+string(rune('0'+k)), 1)
			if edit != nil {
				edit(p)
			}
			pods = append(pods, p)
		}
		c.node(n, "a100x8", pods...)
	}
	return c
}

func TestTwoHalfUsedGPUNodesBecomeOne(t *testing.T) {
	c := halfUsed(t, nil)
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 {
		t.Fatalf("%d moves, want 1:%s", len(p.Moves), summary(p))
	}
	m := p.Moves[0]
	if m.Kind != consolidation.MoveDelete || !slices.Equal(moveNodes(m), []string{"gpu-a"}) {
		t.Fatalf("move %s %v, want Delete [gpu-a]:%s", m.Kind, moveNodes(m), summary(p))
	}
	if len(m.Evict) != 4 {
		t.Fatalf("%d evictions, want gpu-a's 4 pods:%s", len(m.Evict), summary(p))
	}
	for _, ev := range m.Evict {
		if ev.To != "gpu-b" {
			t.Errorf("pod %s planned onto %q, want gpu-b", ev.Pod.Name, ev.To)
		}
	}
	if m.PriceBefore != 32.77 || m.PriceAfter != 0 {
		t.Errorf("prices %.2f -> %.2f, want 32.77 -> 0", m.PriceBefore, m.PriceAfter)
	}
	if k := kept(t, p, "gpu-b"); k.Reason != consolidation.ReasonReceivesPods {
		t.Errorf("gpu-b kept for %s, want %s", k.Reason, consolidation.ReasonReceivesPods)
	}
}

// TestDeletesAboveUtilizationThreshold: a 1-GPU node whose one GPU is in
// use is 100% used; its pod fits a free GPU of an 8-GPU node, so it goes.
func TestDeletesAboveUtilizationThreshold(t *testing.T) {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10)
	var big []*v1.Pod
	for k := 0; k < 7; k++ {
		big = append(big, gpuPod("big-"+string(rune('0'+k)), 1))
	}
	c.node("big", "a100x8", big...).node("small", "a100x1", gpuPod("solo", 1))
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"small"}) || p.Moves[0].Evict[0].To != "big" {
		t.Fatalf("want small deleted, its pod onto big:%s", summary(p))
	}
}

// TestCPUPodsLeaveGPUNode: a GPU node holds only CPU pods. They go to the
// CPU node with room, not to the other GPU node (which has cpu to spare
// too), and the GPU node is removed.
func TestCPUPodsLeaveGPUNode(t *testing.T) {
	c := newCluster(t).group("a100x4", gpuNode(4, "32", "256Gi"), 16).group("cpu", cpuNode("16", "64Gi"), 0.77)
	c.node("gpu-busy", "a100x4", gpuPod("t0", 1), gpuPod("t1", 1), gpuPod("t2", 1), gpuPod("t3", 1), cpuPod("fill", "20"))
	c.node("gpu-cpu-only", "a100x4", cpuPod("web-0", "2"), cpuPod("web-1", "2"), cpuPod("web-2", "2"))
	c.node("cpu-1", "cpu", cpuPod("web-3", "10"))
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"gpu-cpu-only"}) {
		t.Fatalf("want gpu-cpu-only deleted:%s", summary(p))
	}
	for _, ev := range p.Moves[0].Evict {
		if ev.To != "cpu-1" {
			t.Errorf("pod %s planned onto %s, want the CPU node cpu-1", ev.Pod.Name, ev.To)
		}
	}
}

// TestCPUPodsLeaveGPUNodeForNewCPUNode: no CPU node has room, so the GPU
// node holding only CPU pods is replaced by a new CPU node.
func TestCPUPodsLeaveGPUNodeForNewCPUNode(t *testing.T) {
	c := newCluster(t).group("a100x4", gpuNode(4, "32", "256Gi"), 16).group("cpu", cpuNode("16", "64Gi"), 0.77)
	c.node("gpu-busy", "a100x4", gpuPod("t0", 1), gpuPod("t1", 1), gpuPod("t2", 1), gpuPod("t3", 1), cpuPod("fill", "27"))
	c.node("gpu-cpu-only", "a100x4", cpuPod("web-0", "2"), cpuPod("web-1", "2"), cpuPod("web-2", "2"))
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 {
		t.Fatalf("want one move:%s", summary(p))
	}
	m := p.Moves[0]
	if m.Kind != consolidation.MoveReplace || !slices.Equal(moveNodes(m), []string{"gpu-cpu-only"}) ||
		m.Launch != (consolidation.Launch{Group: "cpu", Count: 1}) || m.PriceAfter != 0.77 {
		t.Fatalf("want gpu-cpu-only replaced by one cpu node:%s", summary(p))
	}
	for _, ev := range m.Evict {
		if !ev.ToReplacement {
			t.Errorf("pod %s planned onto %s, want the replacement", ev.Pod.Name, ev.To)
		}
	}
}

// TestReplacesSeveralNodesByOne: four 1-GPU nodes ($4.10 each) with a pod
// each and no room elsewhere become one 4-GPU node ($12): multi-node, across
// groups. Three would not pay (one $12 node for $12.30).
func TestReplacesSeveralNodesByOne(t *testing.T) {
	c := newCluster(t).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10).group("a100x4", gpuNode(4, "32", "256Gi"), 12)
	for _, n := range []string{"s1", "s2", "s3", "s4"} {
		c.node(n, "a100x1", gpuPod("p-"+n, 1))
	}
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 {
		t.Fatalf("want one move:%s", summary(p))
	}
	m := p.Moves[0]
	if m.Kind != consolidation.MoveReplace || len(m.Nodes) != 4 || m.Launch != (consolidation.Launch{Group: "a100x4", Count: 1}) {
		t.Fatalf("want the four 1-GPU nodes replaced by one a100x4:%s", summary(p))
	}
	if m.PriceBefore < 16.39 || m.PriceBefore > 16.41 || m.PriceAfter != 12 {
		t.Errorf("prices %.2f -> %.2f, want 16.40 -> 12", m.PriceBefore, m.PriceAfter)
	}
}

// TestSpotReplacementsOptIn: an on-demand node whose pods fit a much
// cheaper spot node is replaced by it only when spot replacements are on.
func TestSpotReplacementsOptIn(t *testing.T) {
	build := func() *cluster {
		c := newCluster(t).group("a100x4", gpuNode(4, "32", "256Gi"), 16).
			group("a100x4-spot", gpuNode(4, "32", "256Gi"), 5, func(b *builder.GroupBuilder) { b.Spot() })
		return c.node("od", "a100x4", gpuPod("t0", 1), gpuPod("t1", 1))
	}
	p := plan(t, build(), immediate(), nil)
	if len(p.Moves) != 0 {
		t.Fatalf("spot replacement without opting in:%s", summary(p))
	}
	if k := kept(t, p, "od"); k.Reason != consolidation.ReasonNoCheaperPlacement {
		t.Errorf("od kept for %s, want %s", k.Reason, consolidation.ReasonNoCheaperPlacement)
	}
	o := immediate()
	o.SpotReplacements = true
	p = plan(t, build(), o, nil)
	if len(p.Moves) != 1 || p.Moves[0].Launch.Group != "a100x4-spot" {
		t.Fatalf("want od replaced by a spot node:%s", summary(p))
	}
}

// TestPrefersWholeFreeGPUs: a 1-GPU pod leaving its node goes to the node
// with the fewest free GPUs it fits, so the 7 free GPUs of the other stay
// together on one node.
func TestPrefersWholeFreeGPUs(t *testing.T) {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10)
	var tight []*v1.Pod
	for k := 0; k < 7; k++ {
		tight = append(tight, gpuPod("tight-"+string(rune('0'+k)), 1))
	}
	c.node("a-roomy", "a100x8", gpuPod("roomy-0", 1)).node("b-tight", "a100x8", tight...)
	c.node("c-small", "a100x1", gpuPod("solo", 1))
	// Keep both big nodes so only the small one moves: where its pod goes
	// is what the destination order decides.
	for _, n := range []string{"a-roomy", "b-tight"} {
		c.snap.Node(n).Node.Annotations = map[string]string{drain.AnnotationDoNotDisrupt: "true"}
	}
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"c-small"}) {
		t.Fatalf("want c-small deleted:%s", summary(p))
	}
	if to := p.Moves[0].Evict[0].To; to != "b-tight" {
		t.Errorf("solo planned onto %s, want b-tight (1 free GPU) rather than a-roomy (7 free)", to)
	}
}

func TestPDBWithNoDisruptionsBlocks(t *testing.T) {
	c := halfUsed(t, func(p *v1.Pod) { p.Labels["app"] = "train" }).pdb("train", 0, "train")
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 0 {
		t.Fatalf("a move despite the budget:%s", summary(p))
	}
	for _, n := range []string{"gpu-a", "gpu-b"} {
		if k := kept(t, p, n); k.Reason != consolidation.ReasonBlockedByPod || k.PodCode != drain.CodeNotEnoughPDB {
			t.Errorf("%s kept for %s/%s, want %s/%s", n, k.Reason, k.PodCode, consolidation.ReasonBlockedByPod, drain.CodeNotEnoughPDB)
		}
	}
	c.pdbs[0].Status.DisruptionsAllowed = 4
	if p := plan(t, c, immediate(), nil); len(p.Moves) != 1 {
		t.Fatalf("with 4 disruptions allowed, want one move:%s", summary(p))
	}
}

func TestDoNotDisrupt(t *testing.T) {
	for _, key := range []string{drain.AnnotationDoNotDisrupt, drain.AnnotationKarpenterDoNotDisrupt} {
		t.Run("pods "+key, func(t *testing.T) {
			c := halfUsed(t, func(p *v1.Pod) { p.Annotations = map[string]string{key: "true"} })
			p := plan(t, c, immediate(), nil)
			if len(p.Moves) != 0 {
				t.Fatalf("a move despite do-not-disrupt:%s", summary(p))
			}
			if k := kept(t, p, "gpu-a"); k.PodCode != drain.CodeDoNotDisrupt {
				t.Errorf("gpu-a kept for %s/%s, want the pod rule %s", k.Reason, k.PodCode, drain.CodeDoNotDisrupt)
			}
		})
		t.Run("node "+key, func(t *testing.T) {
			c := halfUsed(t, nil)
			c.snap.Node("gpu-a").Node.Annotations = map[string]string{key: "true"}
			p := plan(t, c, immediate(), nil)
			if k := kept(t, p, "gpu-a"); k.Reason != consolidation.ReasonDoNotDisrupt {
				t.Errorf("gpu-a kept for %s, want %s", k.Reason, consolidation.ReasonDoNotDisrupt)
			}
			// The protected node still takes the other's pods.
			if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"gpu-b"}) || p.Moves[0].Evict[0].To != "gpu-a" {
				t.Fatalf("want gpu-b's pods onto the protected gpu-a:%s", summary(p))
			}
		})
	}
	t.Run("safe-to-evict false", func(t *testing.T) {
		c := halfUsed(t, func(p *v1.Pod) { p.Annotations = map[string]string{drain.AnnotationSafeToEvict: "false"} })
		p := plan(t, c, immediate(), nil)
		if len(p.Moves) != 0 || kept(t, p, "gpu-a").PodCode != drain.CodeNotSafeToEvict {
			t.Fatalf("want both kept for %s:%s", drain.CodeNotSafeToEvict, summary(p))
		}
	})
	t.Run("scale-down-disabled", func(t *testing.T) {
		c := halfUsed(t, nil)
		c.snap.Node("gpu-a").Node.Annotations = map[string]string{disruption.AnnotationScaleDownDisabled: "true"}
		p := plan(t, c, immediate(), nil)
		if k := kept(t, p, "gpu-a"); k.Reason != consolidation.ReasonScaleDownDisabled {
			t.Errorf("gpu-a kept for %s, want %s", k.Reason, consolidation.ReasonScaleDownDisabled)
		}
	})
}

// TestStableTime: a move waits until its nodes have been consolidatable for
// StableTime, across passes through State; a pass in which the node is not
// consolidatable restarts its clock. Moves that wait are each valid alone
// (either half-used node could go), and are planned again one after the
// other when they come due.
func TestStableTime(t *testing.T) {
	o := consolidation.GPUCostOptions()
	c := halfUsed(t, nil)
	planner := newPlanner(t, o)
	in := c.input(t0)
	p := planner.Plan(in)
	if len(p.Moves) != 0 || len(p.Waiting) != 1 || p.Waiting[0].Wait != o.StableTime {
		t.Fatalf("first pass: want gpu-a's deletion waiting %s:%s %+v", o.StableTime, summary(p), p.Waiting)
	}
	if k := kept(t, p, "gpu-a"); k.Reason != consolidation.ReasonNotStableLongEnough {
		t.Errorf("gpu-a kept for %s, want %s", k.Reason, consolidation.ReasonNotStableLongEnough)
	}
	in.State, in.Now = p.State, t0.Add(5*time.Minute)
	p = planner.Plan(in)
	if len(p.Moves) != 0 || len(p.Waiting) != 1 || p.Waiting[0].Wait != 5*time.Minute {
		t.Fatalf("after 5m: want the moves waiting 5m more:%s %+v", summary(p), p.Waiting)
	}
	in.State, in.Now = p.State, t0.Add(10*time.Minute)
	if p = planner.Plan(in); len(p.Moves) != 1 {
		t.Fatalf("after 10m: want one move carried out:%s", summary(p))
	}
	if len(p.State.Since) != 0 {
		t.Errorf("state after the move %v, want empty (one node goes, the other takes its pods)", p.State.Since)
	}
	// The clock restarts when a pass does not find the node consolidatable.
	in.State, in.Now = consolidation.State{}, t0.Add(11*time.Minute)
	if p = planner.Plan(in); len(p.Moves) != 0 {
		t.Fatalf("with the state lost, want the clock to restart:%s", summary(p))
	}
}

func TestGroupMinimumAndClusterMinimum(t *testing.T) {
	c := halfUsed(t, nil)
	g := *c.snap.NodeGroup("a100x8")
	g.MinSize = 2
	if err := c.snap.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 0 || kept(t, p, "gpu-a").Reason != consolidation.ReasonMinSize {
		t.Fatalf("group at its minimum, want gpu-a kept for %s:%s", consolidation.ReasonMinSize, summary(p))
	}
	o := immediate()
	o.Limits.Cores.Min = 100 // two 64-core nodes make 128
	p = plan(t, halfUsed(t, nil), o, nil)
	if len(p.Moves) != 0 || kept(t, p, "gpu-a").Reason != consolidation.ReasonClusterMinimum {
		t.Fatalf("cluster at its core minimum, want gpu-a kept for %s:%s", consolidation.ReasonClusterMinimum, summary(p))
	}
}

// TestReplacementWithinLimits: the replacement group is at its maximum, or
// the cluster at --max-nodes-total with the old nodes still counted, so the
// four 1-GPU nodes stay.
func TestReplacementWithinLimits(t *testing.T) {
	build := func() *cluster {
		c := newCluster(t).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10).group("a100x4", gpuNode(4, "32", "256Gi"), 12)
		for _, n := range []string{"s1", "s2", "s3", "s4"} {
			c.node(n, "a100x1", gpuPod("p-"+n, 1))
		}
		return c
	}
	c := build()
	g := *c.snap.NodeGroup("a100x4")
	g.MaxSize = 0
	if err := c.snap.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 0 {
		t.Fatalf("group at max size, want no move:%s", summary(p))
	}
	if k := kept(t, p, "s1"); k.Reason != consolidation.ReasonNoCheaperPlacement {
		t.Errorf("s1 kept for %s, want %s", k.Reason, consolidation.ReasonNoCheaperPlacement)
	}
	o := immediate()
	o.Limits.MaxNodesTotal = 4
	if p := plan(t, build(), o, nil); len(p.Moves) != 0 {
		t.Fatalf("--max-nodes-total 4 with 4 nodes running, want no move:%s", summary(p))
	}
	o.Limits.MaxNodesTotal = 5
	if p := plan(t, build(), o, nil); len(p.Moves) != 1 {
		t.Fatalf("--max-nodes-total 5, want the replacement:%s", summary(p))
	}
	// A node the cloud was asked for and has not registered counts as
	// scale-up counts it: with it, the replacement would make 6.
	onItsWay := func(in *consolidation.Input) { in.Ordered = map[string]int{"a100x1": 1} }
	if p := plan(t, build(), o, onItsWay); len(p.Moves) != 0 {
		t.Fatalf("--max-nodes-total 5 with 4 nodes running and 1 on its way, want no move:%s", summary(p))
	}
}

// TestMovesAreValidTogether: three nodes whose pods would each fit on
// either other alone. Moves are planned one after another on the cluster
// as it will be: once n1's pods are planned onto n2 and n3, those cannot
// take everyone else's too, and no pod is planned onto a node that goes.
func TestMovesAreValidTogether(t *testing.T) {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77)
	for _, n := range []string{"n1", "n2", "n3"} {
		c.node(n, "a100x8", gpuPod(n+"-a", 2), gpuPod(n+"-b", 2), gpuPod(n+"-c", 1))
	}
	p := plan(t, c, immediate(), nil) // checkSafe carries the plan out
	if len(p.Moves) != 1 {
		t.Fatalf("15 GPUs of pods need 2 of the 3 nodes, want 1 deletion:%s", summary(p))
	}
}

// TestWaitingMoveLeavesOthersFree: a move that waits is undone, so its node
// still takes the pods of a later move.
func TestInFlightReplacements(t *testing.T) {
	c := halfUsed(t, nil)
	p := plan(t, c, immediate(), func(in *consolidation.Input) {
		in.Replacing = []consolidation.Replacement{{Nodes: []string{"gpu-a"}, Group: "a100x8", Count: 1}}
	})
	if len(p.Moves) != 0 {
		t.Fatalf("gpu-a is being replaced: its pods are leaving, it takes none, want no move:%s", summary(p))
	}
	if k := kept(t, p, "gpu-a"); k.Reason != consolidation.ReasonBeingReplaced {
		t.Errorf("gpu-a kept for %s, want %s", k.Reason, consolidation.ReasonBeingReplaced)
	}
	c.node("gpu-new", "a100x8")
	p = plan(t, c, immediate(), func(in *consolidation.Input) {
		in.Replacing = []consolidation.Replacement{{Nodes: []string{"gpu-a"}, Group: "a100x8", Count: 1, New: []string{"gpu-new"}}}
	})
	if k := kept(t, p, "gpu-new"); k.Reason != consolidation.ReasonReplacementNode {
		t.Errorf("gpu-new kept for %s, want %s", k.Reason, consolidation.ReasonReplacementNode)
	}
	for _, m := range p.Moves {
		for _, ev := range m.Evict {
			if ev.To == "gpu-new" {
				t.Errorf("pod %s planned onto the replacement node of another move", ev.Pod.Name)
			}
		}
	}
}

func TestDisabled(t *testing.T) {
	p := newPlanner(t, consolidation.DefaultOptions()).Plan(halfUsed(t, nil).input(t0))
	if len(p.Moves) != 0 || len(p.Kept) != 0 {
		t.Fatalf("disabled consolidation planned:%s", summary(p))
	}
}

// TestPartnersWhereTheyReallyAre: api pods must run beside a cache pod
// (required pod affinity on the hostname). Node a's deletion waits for its
// stable time, node b's is due. b's api pod is planned next to the cache
// pod where it really is, on a, although a's own move (which would take the
// cache elsewhere) was found first: a move that waits changes nothing.
func TestPartnersWhereTheyReallyAre(t *testing.T) {
	c := newCluster(t).group("cpu", cpuNode("16", "64Gi"), 0.77)
	api := func(name string) *v1.Pod {
		return owned(builder.Pod(name).CPU("1").Memory("1Gi").Affinity(v1.LabelHostname, "app", "cache"), "api")
	}
	cache := owned(builder.Pod("cache").CPU("1").Memory("1Gi"), "cache")
	c.node("a", "cpu", cache, api("api-a")).node("b", "cpu", api("api-b"))
	c.node("c", "cpu", cpuPod("web", "12"))
	o := consolidation.GPUCostOptions()
	o.Budgets = nil
	p := plan(t, c, o, func(in *consolidation.Input) {
		in.State = consolidation.State{Since: map[string]time.Time{"b": t0.Add(-time.Hour)}}
	})
	if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"b"}) {
		t.Fatalf("want b deleted:%s", summary(p))
	}
	if to := p.Moves[0].Evict[0].To; to != "a" {
		t.Errorf("api-b planned onto %s, want a, where the cache pod is", to)
	}
	if k := kept(t, p, "a"); k.Reason != consolidation.ReasonNotStableLongEnough {
		t.Errorf("a kept for %s, want %s", k.Reason, consolidation.ReasonNotStableLongEnough)
	}
}

// TestReplacementMustSave: a replacement must cost strictly less, and at
// least MinSavings less.
func TestReplacementMustSave(t *testing.T) {
	build := func(price float64) *cluster {
		c := newCluster(t).group("old", gpuNode(1, "8", "64Gi"), 4.10).group("new", gpuNode(1, "8", "64Gi"), price)
		return c.node("n", "old", gpuPod("p", 1))
	}
	o := immediate()
	o.MinSavings = 0
	if p := plan(t, build(4.10), o, nil); len(p.Moves) != 0 {
		t.Errorf("replaced by a node of the same price:%s", summary(p))
	}
	if p := plan(t, build(4.00), o, nil); len(p.Moves) != 1 {
		t.Errorf("with no minimum saving, want a cheaper node:%s", summary(p))
	}
	o.MinSavings = 0.2
	if p := plan(t, build(3.40), o, nil); len(p.Moves) != 0 {
		t.Errorf("a 17%% saving with --consolidation-min-savings 0.2:%s", summary(p))
	}
	if p := plan(t, build(3.28), o, nil); len(p.Moves) != 1 {
		t.Errorf("a 20%% saving with --consolidation-min-savings 0.2, want the move:%s", summary(p))
	}
}

// TestEvictOneByOne: a PodDisruptionBudget allows one disruption and the
// node has four pods under it: the move goes, its pods evicted one at a
// time, as scale-down does.
func TestEvictOneByOne(t *testing.T) {
	c := halfUsed(t, func(p *v1.Pod) { p.Labels["app"] = "train" }).pdb("train", 1, "train")
	p := plan(t, c, immediate(), nil)
	if len(p.Moves) != 1 || !p.Moves[0].EvictOneByOne {
		t.Fatalf("want one move evicting one by one:%s", summary(p))
	}
}

// TestOnCompletionPodKeepsItsNode: a pod annotated safe-to-evict
// "on-completion" runs to completion; consolidation, which is voluntary,
// never deletes its node under it.
func TestOnCompletionPodKeepsItsNode(t *testing.T) {
	c := newCluster(t).group("a100x4", gpuNode(4, "32", "256Gi"), 16).group("cpu", cpuNode("16", "64Gi"), 0.77)
	job := cpuPod("batch-0", "2")
	job.Annotations = map[string]string{drain.AnnotationSafeToEvict: drain.SafeToEvictOnCompletion}
	c.node("gpu-cpu-only", "a100x4", job)
	c.node("cpu-1", "cpu", cpuPod("web-3", "10"))
	p := plan(t, c, immediate(), nil)
	for _, m := range p.Moves {
		if slices.Contains(moveNodes(m), "gpu-cpu-only") {
			t.Fatalf("the node of a pod that runs to completion was consolidated:%s", summary(p))
		}
	}
}
