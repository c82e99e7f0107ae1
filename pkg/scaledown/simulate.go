package scaledown

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	rsim "github.com/gpuscale/gpuscale/pkg/scaledown/removal"
)

// removal is a node the simulation removed: an unneeded node.
type removal struct {
	node int32
	// empty: none of the node's own pods must move.
	empty bool
	// oneByOne: a PodDisruptionBudget allows fewer disruptions than the
	// node's pods need.
	oneByOne bool
	// moves and daemonSets index session.moves and session.daemonSetPods.
	movesLo, movesHi int
	dsLo, dsHi       int
}

// simulateCandidates tries to remove the candidates one by one, in order.
func (s *session) simulateCandidates() {
	limit := s.opts.NonEmptyCandidatesCount
	for _, i := range s.cands {
		st := &s.nodes[i]
		if reason, msg := s.room.check(s, st); reason != "" {
			s.keep(i, reason, msg)
			continue
		}
		if !st.empty && limit > 0 && s.nonEmptyFound >= limit {
			s.keep(i, ReasonCandidateLimit, fmt.Sprintf(
				"not simulated: %d non-empty nodes are already unneeded in this loop (--scale-down-non-empty-candidates-count=%d)",
				s.nonEmptyFound, limit))
			continue
		}
		if !s.simulate(i) {
			continue
		}
		s.room.take(s, st)
		if !st.empty {
			s.nonEmptyFound++
		}
	}
}

// simulate removes node i from the snapshot and places every pod that must
// move on the remaining nodes. On success the change stays in the snapshot;
// on failure it is undone and the node kept with the reason.
func (s *session) simulate(i int32) bool {
	st := &s.nodes[i]
	dsLo := len(s.daemonSetPods)
	items, ok := s.podsToMove(i)
	if !ok {
		s.daemonSetPods = s.daemonSetPods[:dsLo]
		return false
	}
	own := 0
	for k := range items {
		if items[k].P == nil {
			own++
		}
	}
	evictDaemonSets := s.opts.DaemonSetEvictionForOccupiedNodes
	if own == 0 {
		evictDaemonSets = s.opts.DaemonSetEvictionForEmptyNodes
	}
	if !evictDaemonSets {
		s.daemonSetPods = s.daemonSetPods[:dsLo]
	}
	mark := s.sim.Mark()
	fail := func() bool {
		s.sim.DropSince(mark)
		s.daemonSetPods = s.daemonSetPods[:dsLo]
		return false
	}
	if !s.precheck(i, items) {
		return fail()
	}
	s.snap.Fork()
	_ = s.snap.RemoveNode(st.name()) // the node is in the snapshot: candidates are never removed twice
	s.sim.SetGone(i, true)
	if !s.placeAll(i, items) {
		_ = s.snap.Revert()
		s.sim.SetGone(i, false)
		return fail()
	}
	_ = s.snap.Commit()
	s.record(i, items, own == 0, dsLo)
	return true
}

// podsToMove lists the pods of node i that must move (rsim.Judge.ToMove)
// and collects its DaemonSet pods for graceful eviction.
func (s *session) podsToMove(i int32) ([]rsim.Item, bool) {
	st := &s.nodes[i]
	items, ds, b, ok := s.judge.ToMove(s.sim, i, st.ni, &st.judged, s.p.toMove[:0], s.daemonSetPods)
	s.p.toMove = items
	if !ok {
		s.keepBlocked(i, b)
		return nil, false
	}
	s.daemonSetPods = ds
	return items, true
}

// precheck tells, before the snapshot is touched, whether each pod on its
// own passes somewhere the checks that depend on a destination alone
// (resources, taints, node affinity, ports). Failing it is final, since the
// full placement only adds constraints; it spares the snapshot a removal and
// its undo for nodes whose pods plainly fit nowhere.
func (s *session) precheck(i int32, items []rsim.Item) bool {
	for k := range items {
		it := &items[k]
		if it.P == nil {
			it.P = s.sim.NewPod(it.PI, destOrder)
		}
		if m, ok := s.sim.FitsAlone(i, it.P); !ok {
			s.keepNoPlace(i, it.P.Orig, m)
			return false
		}
	}
	return true
}

// destOrder is the one destination order scale-down gives the simulator.
const destOrder = 0

// placeAll places each pod on the first destination that passes the
// scheduler's checks, starting where the previous pod of the node went
// (next fit) or at its shape's hint if that is further: the destinations in
// between were found full. The search wraps around all destinations before
// giving up.
func (s *session) placeAll(i int32, items []rsim.Item) bool {
	cursor := 0
	for k := range items {
		it := &items[k]
		cursor = max(cursor, it.P.Hint())
		d, why := s.sim.Place(it.P, &cursor)
		if d < 0 {
			s.keepNoPlace(i, it.P.Orig, why)
			return false
		}
		it.Dest = d
	}
	return true
}

func (s *session) keepNoPlace(i int32, pod *v1.Pod, m rsim.Miss) {
	k := s.keep(i, ReasonNoPlaceToMovePods, rsim.MissMessage(pod, m, s.nodeName))
	k.Pod = pod
}

func (s *session) nodeName(i int32) string { return s.nodes[i].name() }

// rehop is a pod an earlier removal moved to node from, moved again to
// node to by from's own removal.
type rehop struct {
	move     int32
	from, to int32
}

// record notes a successful removal: the moves of the node's own pods, the
// new places of pods earlier removals had moved here, and the
// PodDisruptionBudget allowance the evictions take. A pod moved again keeps
// its first destination: whether it goes on depends on whether this node
// is removed now or waits, which finalDestinations settles.
func (s *session) record(i int32, items []rsim.Item, empty bool, dsLo int) {
	r := removal{node: i, empty: empty, movesLo: len(s.moves), dsLo: dsLo, dsHi: len(s.daemonSetPods)}
	for k := range items {
		it := &items[k]
		if it.P.Move >= 0 {
			s.rehops = append(s.rehops, rehop{move: it.P.Move, from: i, to: it.Dest})
			continue
		}
		it.P.Move = int32(len(s.moves))
		s.moves = append(s.moves, disruption.Move{Pod: it.P.Orig, To: s.nodes[it.Dest].name()})
		if s.judge.Ctx.Budgets.Consume(it.P.Orig) {
			r.oneByOne = true
		}
	}
	r.movesHi = len(s.moves)
	s.nodes[i].removal = int32(len(s.removals))
	s.removals = append(s.removals, r)
}

// finalDestinations follows each moved pod through the removals carried
// out in this loop: a pod placed on a node that goes too follows that
// node's removal to its next place; on a node that waits, it stays. Rehops
// are in simulation order, so a chain is followed link by link.
func (s *session) finalDestinations() {
	for _, h := range s.rehops {
		m := &s.moves[h.move]
		if from := &s.nodes[h.from]; from.deleted && m.To == from.name() {
			m.To = s.nodes[h.to].name()
		}
	}
}
