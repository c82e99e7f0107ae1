package consolidation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
)

// deletePass weighs each candidate in order for deletion: taken out of the
// snapshot, do its pods fit on the remaining nodes? A deletion carried out
// stays in the snapshot, so later candidates cannot count on the node and
// do count its pods where they went; a deletion that must wait for
// StableTime is undone, and so is a failed one. A node whose deletion waits
// keeps its pods in the simulation, where they really are, but takes no pods
// of later moves.
func (s *session) deletePass() {
	for _, i := range s.cands {
		st := &s.nodes[i]
		if reason, msg := s.room.disrupt(s.room.group(st.group), 1); reason != "" {
			s.keep(i, reason, msg)
			continue
		}
		if reason, msg := s.room.belowMinimum(s, []int32{i}, Launch{}); reason != "" {
			s.keep(i, reason, msg)
			continue
		}
		s.tryDelete(i)
	}
}

// tryDelete simulates deleting node i; see deletePass.
func (s *session) tryDelete(i int32) {
	st := &s.nodes[i]
	nodes := []int32{i}
	items, ds, ok := s.podsToMove(nodes)
	if !ok {
		return
	}
	if why := s.underpaid(st.price, len(items)); why != "" {
		st.miss = why
		return
	}
	mark := s.sim.Mark()
	for k := range items {
		it := &items[k]
		s.prepare(it)
		if m, fits := s.sim.FitsAlone(i, it.P); !fits {
			st.miss = s.missMessage(it.P.Orig, m)
			s.sim.DropSince(mark)
			return
		}
	}
	s.snap.Fork()
	_ = s.snap.RemoveNode(st.name()) // candidates are in the snapshot and weighed once
	s.sim.SetGone(i, true)
	undo := func() {
		_ = s.snap.Revert()
		s.sim.SetGone(i, false)
		s.sim.DropSince(mark)
	}
	if m, ok := s.placeAll(items, false); !ok {
		st.miss = s.missMessage(m.pod, m.Miss)
		undo()
		return
	}
	if ok, since := s.stable(nodes); !ok {
		undo()
		// The node is on its way out: no later move of this pass may put
		// pods on it. They would move twice, and filling an empty node
		// trades like for like, evicting pods for the saving its own
		// deletion brings without them.
		s.sim.SetGone(i, true)
		s.wait(MoveDelete, nodes, since)
		return
	}
	_ = s.snap.Commit()
	msg := "its pods fit on other nodes"
	if st.empty {
		msg = "no pod must move"
	}
	s.record(Move{Kind: MoveDelete, Nodes: s.refs(nodes), PriceBefore: st.price, DaemonSetPods: ds,
		Message: fmt.Sprintf("delete: %s; saves $%.2f/h", msg, st.price)}, nodes, items)
}

// prepare makes the moving copy of an item's pod, following the GPU order
// when it asks for GPUs.
func (s *session) prepare(it *removal.Item) {
	if it.P != nil {
		return
	}
	order := s.cpuOrder
	if gpu.Requested(&it.PI.Requests) > 0 {
		order = s.gpuOrder
	}
	it.P = s.sim.NewPod(it.PI, order)
}

// podsToMove lists the pods of nodes that must move, and their DaemonSet
// pods (removal.Judge.ToMove, node after node). A pod that is now blocked
// keeps its node.
func (s *session) podsToMove(nodes []int32) ([]removal.Item, []*v1.Pod, bool) {
	items := s.p.items[:0]
	var ds []*v1.Pod
	for _, i := range nodes {
		st := &s.nodes[i]
		var b removal.Blocked
		var ok bool
		if items, ds, b, ok = s.judge.ToMove(s.sim, i, st.ni, &st.judged, items, ds); !ok {
			s.keepBlocked(i, b)
			s.p.items = items
			return nil, nil, false
		}
	}
	s.p.items = items
	return items, ds, true
}

// podMiss is a pod that fit nowhere and why.
type podMiss struct {
	removal.Miss
	pod *v1.Pod
}

// placeAll places each item on the first destination of its order that
// passes every check, from where the previous pod of its order went (next
// fit) or its shape's hint if that is further. With partial, a pod that
// fits nowhere is left unplaced (a replacement node will take it) and the
// others go on; without, the first such pod ends the placement.
func (s *session) placeAll(items []removal.Item, partial bool) (podMiss, bool) {
	cursors := [2]int{}
	for k := range items {
		it := &items[k]
		c := &cursors[0]
		if it.P.Order() == s.cpuOrder {
			c = &cursors[1]
		}
		*c = max(*c, it.P.Hint())
		d, m := s.sim.Place(it.P, c)
		if d < 0 && !partial {
			return podMiss{Miss: m, pod: it.P.Orig}, false
		}
		it.Dest = d
	}
	return podMiss{}, true
}

func (s *session) missMessage(pod *v1.Pod, m removal.Miss) string {
	return removal.MissMessage(pod, m, s.nodeName)
}

func (s *session) nodeName(i int32) string { return s.nodes[i].name() }

func (s *session) refs(nodes []int32) []NodeRef {
	out := make([]NodeRef, len(nodes))
	for k, i := range nodes {
		out[k] = NodeRef{Name: s.nodes[i].name(), Group: s.nodes[i].groupID()}
	}
	return out
}

// record notes a move carried out: the evictions of the nodes' own pods
// with where they go, the new places of pods earlier moves had put on these
// nodes, the PodDisruptionBudget allowance the evictions take, and the
// room the move uses.
func (s *session) record(m Move, nodes []int32, items []removal.Item) {
	pm := plannedMove{Move: m, lo: len(s.evictions)}
	for k := range items {
		it := &items[k]
		ev := Eviction{ToReplacement: it.Dest < 0}
		if it.Dest >= 0 {
			ev.To = s.nodes[it.Dest].name()
			s.nodes[it.Dest].received = true
		}
		if it.P.Move >= 0 {
			ev.Pod = s.evictions[it.P.Move].Pod
			s.evictions[it.P.Move] = ev
			continue
		}
		ev.Pod = it.P.Orig
		it.P.Move = int32(len(s.evictions))
		s.evictions = append(s.evictions, ev)
		if s.judge.Ctx.Budgets.Consume(it.P.Orig) {
			pm.EvictOneByOne = true
		}
	}
	pm.hi = len(s.evictions)
	for _, i := range nodes {
		s.nodes[i].fate = moved
	}
	s.room.take(s, nodes, m.Launch)
	s.moves = append(s.moves, pm)
}

// underpaid returns why a move that saves saving an hour does not pay for
// evicting n pods (MinSavingsPerPod), or "". Where prices are unknown
// (zero) the saving cannot be weighed and only node counts are.
func (s *session) underpaid(saving float64, n int) string {
	need := s.opts.MinSavingsPerPod * float64(n)
	if saving <= 0 || n == 0 || saving >= need-1e-9 {
		return ""
	}
	return fmt.Sprintf("saves $%.2f/h for %d pods evicted, less than $%.2f/h a pod (--consolidation-min-savings-per-pod)",
		saving, n, s.opts.MinSavingsPerPod)
}
