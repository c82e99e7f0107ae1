package scaledown

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
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

// moveItem is a pod that must leave the node being simulated: one of its own
// (pi set, mp made when it is first placed) or one an earlier removal in
// this loop moved there (mp set).
type moveItem struct {
	pi   *snapshot.PodInfo
	mp   *movingPod
	dest int32
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
		if items[k].mp == nil {
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
	mark := s.p.arena.n
	fail := func() bool {
		s.p.dropMovingSince(mark)
		s.daemonSetPods = s.daemonSetPods[:dsLo]
		return false
	}
	if !s.precheck(i, items) {
		return fail()
	}
	s.snap.Fork()
	_ = s.snap.RemoveNode(st.name()) // the node is in the snapshot: candidates are never removed twice
	st.gone = true
	if !s.placeAll(i, items) {
		_ = s.snap.Revert()
		st.gone = false
		return fail()
	}
	_ = s.snap.Commit()
	s.record(i, items, own == 0, dsLo)
	return true
}

// podsToMove lists the pods of node i that must move, and collects its
// DaemonSet pods for graceful eviction. The node's own pods come first in
// its pod list, in their original order, and pods that earlier removals in
// this loop moved here follow; those move again without being judged, since
// their budget was charged when they first moved. The node's own pods are
// judged again only if they fall under a budget that removals have drawn on
// since the loop started.
func (s *session) podsToMove(i int32) ([]moveItem, bool) {
	st := &s.nodes[i]
	pods := st.ni.Pods
	rejudge := st.budgeted && s.dctx.Budgets.Consumed() > 0
	s.dctx.Node = st.ni.Node
	items := s.p.toMove[:0]
	for k, pi := range pods {
		if k >= st.own {
			if mp := s.p.moved[pi]; mp != nil {
				items = append(items, moveItem{mp: mp})
				continue
			}
		}
		kind := verdictSkip
		if k < st.own && !rejudge {
			kind = s.verdicts[st.verdictsAt+k]
		} else {
			v := s.p.rules.Evaluate(&s.dctx, pi.Pod)
			switch {
			case v.Outcome == drain.Block:
				s.keepBlocked(i, pi.Pod, v)
				s.p.toMove = items
				return nil, false
			case v.Outcome == drain.Drain:
				kind = verdictMove
			case v.Outcome == drain.Wait:
				st.noteOnCompletion(pi.Pod)
			case v.Code == drain.CodeDaemonSetPod:
				kind = verdictDaemonSet
			}
		}
		switch kind {
		case verdictMove:
			items = append(items, moveItem{pi: pi})
		case verdictDaemonSet:
			s.daemonSetPods = append(s.daemonSetPods, pi.Pod)
		}
	}
	s.p.toMove = items
	return items, true
}

// precheck tells, before the snapshot is touched, whether each pod on its
// own passes somewhere the checks that depend on a destination alone
// (resources, taints, node affinity, ports). Failing it is final, since the
// full placement only adds constraints; it spares the snapshot a removal and
// its undo for nodes whose pods plainly fit nowhere.
func (s *session) precheck(i int32, items []moveItem) bool {
	for k := range items {
		it := &items[k]
		if it.mp == nil {
			it.mp = s.newMovingPod(it.pi)
		}
		if m, ok := s.fitsAlone(i, it.mp); !ok {
			s.keepNoPlace(i, it.mp.orig, m)
			return false
		}
	}
	return true
}

// fitsAlone looks for a destination that passes the node-local checks for
// mp, starting at its shape's hint, and moves the hint up to it.
//
// Nodes only fill up as the loop commits removals, so a destination that
// failed these checks for a shape fails them for good: the hint is the first
// destination that may still fit the shape, and siblings of a pod that fit
// nowhere fail at once. Nodes skipped without a check (the one being
// simulated) are never jumped over.
func (s *session) fitsAlone(self int32, mp *movingPod) (miss, bool) {
	h := mp.hint
	first := miss{node: -1}
	if h.from >= len(s.dests) {
		return h.miss, false
	}
	skipped := -1
	for j := h.from; j < len(s.dests); j++ {
		d := s.dests[j]
		st := &s.nodes[d]
		if d == self {
			skipped = j
			continue
		}
		if st.gone {
			continue
		}
		if r := mp.check.CheckNodeLocal(st.ni); !r.Fits() {
			if first.node < 0 {
				first = miss{node: d, result: r}
			}
			continue
		}
		h.advance(j, skipped)
		return miss{}, true
	}
	h.advance(len(s.dests), skipped)
	if first.node < 0 {
		first = h.miss // nothing left to try: say what failed before
	}
	h.miss = first
	return first, false
}

// shapeHint is, for one pod shape, the position in the destination order
// before which every destination is known not to fit it.
type shapeHint struct {
	from int
	// miss is why the shape fit nowhere, once it did; node -1 before.
	miss miss
}

func (h *shapeHint) advance(to, skipped int) {
	if skipped >= 0 && skipped < to {
		to = skipped
	}
	h.from = to
}

// shape identifies pods the node-local checks treat alike: pods of one
// controller with the same requests. A pod without a controller is its own
// shape. A wrong match could only keep a node, never remove one.
type shape struct {
	owner                types.UID
	cpu, memory, storage int64
	scalars, scalarSum   int64
}

func (s *session) hintFor(pi *snapshot.PodInfo) *shapeHint {
	ref := metav1.GetControllerOfNoCopy(pi.Pod)
	if ref == nil {
		return &shapeHint{miss: miss{node: -1}}
	}
	sh := shape{owner: ref.UID, cpu: pi.Requests.MilliCPU, memory: pi.Requests.Memory,
		storage: pi.Requests.EphemeralStorage, scalars: int64(len(pi.Requests.Scalar))}
	for _, v := range pi.Requests.Scalar {
		sh.scalarSum += v
	}
	if s.hints == nil {
		s.hints = map[shape]*shapeHint{}
	}
	h := s.hints[sh]
	if h == nil {
		h = &shapeHint{miss: miss{node: -1}}
		s.hints[sh] = h
	}
	return h
}

// placeAll places each pod on the first destination that passes the
// scheduler's checks, starting where the previous pod of the node went
// (next fit) or at its shape's hint if that is further: the destinations in
// between were found full. The search wraps around all destinations before
// giving up.
func (s *session) placeAll(i int32, items []moveItem) bool {
	cursor := 0
	for k := range items {
		it := &items[k]
		cursor = max(cursor, it.mp.hint.from)
		d, why := s.place(it.mp, &cursor)
		if d < 0 {
			s.keepNoPlace(i, it.mp.orig, why)
			return false
		}
		it.dest = d
	}
	return true
}

// place binds mp to the first destination from the cursor on, wrapping
// around, that passes every check, and moves the cursor there; or returns -1
// and the answer of the first destination tried.
func (s *session) place(mp *movingPod, cursor *int) (int32, miss) {
	first := miss{node: -1}
	n := len(s.dests)
	for k, j := 0, *cursor; k < n; k, j = k+1, j+1 {
		if j >= n {
			j = 0
		}
		d := s.dests[j]
		st := &s.nodes[d]
		if st.gone {
			continue
		}
		if r := mp.check.Check(st.ni); !r.Fits() {
			if first.node < 0 {
				first = miss{node: d, result: r}
			}
			continue
		}
		if err := s.snap.AddPodInfo(&mp.info, st.name()); err != nil {
			return -1, miss{node: d, result: predicates.Result{Predicate: predicates.NodeName,
				Reason: predicates.ReasonInvalidPod, Detail: err.Error()}}
		}
		*cursor = j
		return d, miss{}
	}
	return -1, first
}

// miss is why a pod did not fit: the first destination tried and its answer.
type miss struct {
	node   int32
	result predicates.Result
}

func (s *session) keepNoPlace(i int32, pod *v1.Pod, m miss) {
	key := pod.Namespace + "/" + pod.Name
	var msg string
	if m.node < 0 {
		msg = fmt.Sprintf("pod %s must move, but no other node can take pods", key)
	} else {
		name := s.nodes[m.node].name()
		msg = fmt.Sprintf("pod %s fits on no other node (first tried %s: %s)", key, name, m.result.Message(name))
	}
	k := s.keep(i, ReasonNoPlaceToMovePods, msg)
	k.Pod = pod
}

// record notes a successful removal: the moves of the node's own pods, the
// new places of pods earlier removals had moved here, and the
// PodDisruptionBudget allowance the evictions take.
func (s *session) record(i int32, items []moveItem, empty bool, dsLo int) {
	r := removal{node: i, empty: empty, movesLo: len(s.moves), dsLo: dsLo, dsHi: len(s.daemonSetPods)}
	for k := range items {
		it := &items[k]
		to := s.nodes[it.dest].name()
		if it.mp.move >= 0 {
			s.moves[it.mp.move].To = to
			continue
		}
		it.mp.move = int32(len(s.moves))
		s.moves = append(s.moves, Move{Pod: it.mp.orig, To: to})
		if s.dctx.Budgets.Consume(it.mp.orig) {
			r.oneByOne = true
		}
	}
	r.movesHi = len(s.moves)
	s.nodes[i].removal = int32(len(s.removals))
	s.removals = append(s.removals, r)
}
