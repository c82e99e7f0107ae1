// Package removal simulates taking nodes out of a cluster snapshot: each pod
// that must leave is placed on one of the remaining nodes with the
// scheduler's checks, in an order of destinations the caller chooses.
// Scale-down and consolidation share it, so a pod is judged movable the
// same way whichever of them moves it.
//
// A Simulator numbers the nodes it was started with (their order in the
// snapshot at Start) and refers to them by that number. The caller removes
// nodes from the snapshot, marks them Gone here, and places the pods of the
// removed nodes with FitsAlone (the checks that depend on the destination
// alone, fast) and Place (every check, binding the pod in the snapshot).
//
// Moving pods are shallow copies kept in an arena the Simulator reuses from
// loop to loop, so moving tens of thousands of pods allocates little more
// than their PodChecks. The Simulator does no I/O and is not safe for
// concurrent use.
package removal

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Simulator places the pods of removed nodes on the remaining ones.
type Simulator struct {
	snap    *snapshot.Snapshot
	checker *predicates.Checker
	nodes   []*snapshot.NodeInfo
	gone    []bool
	// orders are the destination orders, most preferred first; a pod
	// follows the order it was made with.
	orders [][]int32
	arena  podArena
	moved  map[*snapshot.PodInfo]*Pod
	hints  map[shape]*hint
	// pass is the snapshot Begin forked; doomed the pods it dropped.
	pass   *snapshot.Snapshot
	doomed []*snapshot.PodInfo
	// Revisit lets hints jump over the node FitsAlone skips (self), noting
	// it to be checked first next time, instead of stopping at it. When
	// every node may be self in turn (consolidation weighs them all), a
	// hint that stops at each self rescans the rest of the order for every
	// candidate; scale-down leaves it off, its candidates being few and at
	// the end of its order.
	Revisit bool
}

// Begin opens a planner's pass over snap: it forks snap (End reverts the
// fork), takes the pods below the expendable priority cutoff out of it
// (DropExpendable) and starts the simulation on what is left. Scale-down and
// consolidation open and close every pass so.
func (s *Simulator) Begin(snap *snapshot.Snapshot, cutoff int32) {
	snap.Fork()
	s.pass = snap
	s.doomed = DropExpendable(snap, cutoff, s.doomed)
	s.Start(snap)
}

// End closes the pass Begin opened: the snapshot is back as Begin found it
// and the simulation lets go of it. The revert comes first, as the undo log
// holds the moving pods that Release clears.
func (s *Simulator) End() {
	_ = s.pass.Revert() // the fork Begin opened is always there
	s.pass = nil
	clear(s.doomed[:cap(s.doomed)])
	s.doomed = s.doomed[:0]
	s.Release()
}

// Start begins a loop over snap: the nodes are numbered in snapshot order,
// none is gone, there is no destination order and no pod is moving.
func (s *Simulator) Start(snap *snapshot.Snapshot) {
	s.snap = snap
	s.checker = predicates.New(snap)
	s.nodes = append(s.nodes[:0], snap.Nodes()...)
	s.gone = s.gone[:0]
	for range s.nodes {
		s.gone = append(s.gone, false)
	}
	s.orders = s.orders[:0]
	if s.moved == nil {
		s.moved = map[*snapshot.PodInfo]*Pod{}
	}
	clear(s.hints)
}

// Release ends the loop and drops every reference into its snapshot, so
// that it can be collected; the Simulator keeps its memory for the next.
func (s *Simulator) Release() {
	s.arena.reset()
	clear(s.moved)
	clear(s.hints)
	clear(s.nodes[:cap(s.nodes)])
	s.nodes = s.nodes[:0]
	for i := range s.orders {
		s.orders[i] = nil
	}
	s.orders = s.orders[:0]
	s.snap, s.checker = nil, nil
}

// Len is the number of nodes the Simulator knows.
func (s *Simulator) Len() int { return len(s.nodes) }

// Node returns node i.
func (s *Simulator) Node(i int32) *snapshot.NodeInfo { return s.nodes[i] }

// Checker is the scheduler's checks over the loop's snapshot.
func (s *Simulator) Checker() *predicates.Checker { return s.checker }

// SetGone marks node i as removed from the snapshot (or back).
func (s *Simulator) SetGone(i int32, gone bool) { s.gone[i] = gone }

// Gone tells whether node i is marked removed.
func (s *Simulator) Gone(i int32) bool { return s.gone[i] }

// AddOrder appends a destination order (node numbers, most preferred
// first) and returns its index; the Simulator keeps the slice.
func (s *Simulator) AddOrder(dests []int32) int {
	s.orders = append(s.orders, dests)
	return len(s.orders) - 1
}

// Order returns destination order k.
func (s *Simulator) Order(k int) []int32 { return s.orders[k] }

// Pod is a pod on its way to another node in the simulation: a shallow copy
// with spec.nodeName cleared, because the scheduler's checks refuse a pod
// bound to a different node.
type Pod struct {
	pod  v1.Pod
	info snapshot.PodInfo
	// Orig is the pod as the cluster has it.
	Orig *v1.Pod
	// Check is the pod's scheduling check.
	Check *predicates.PodCheck
	// Move is the caller's bookkeeping (scale-down keeps the index of the
	// pod's move there); NewPod sets it to -1.
	Move  int32
	order int
	// hint is shared by the pods of the pod's shape.
	hint *hint
}

// Order is the destination order the pod follows.
func (p *Pod) Order() int { return p.order }

// Info is the copy's PodInfo, the one bound in the snapshot once placed.
func (p *Pod) Info() *snapshot.PodInfo { return &p.info }

// NewPod copies pi into the arena, prepares its scheduling check and has it
// follow destination order order.
func (s *Simulator) NewPod(pi *snapshot.PodInfo, order int) *Pod {
	p := s.arena.alloc()
	p.pod = *pi.Pod
	p.pod.Spec.NodeName = ""
	p.info = *pi
	p.info.Pod = &p.pod
	p.Orig = pi.Pod
	p.Check = s.checker.PreparePodInfo(&p.info)
	p.order = order
	p.hint = s.hintFor(pi, order)
	p.Move = -1
	s.moved[&p.info] = p
	return p
}

// Moved returns the moving pod whose copy pi is, when an earlier removal
// placed it on a node, or nil.
func (s *Simulator) Moved(pi *snapshot.PodInfo) *Pod { return s.moved[pi] }

// Mark is a point to drop moving pods back to.
func (s *Simulator) Mark() int { return s.arena.n }

// DropSince forgets the moving pods made after mark, when the simulation
// that made them is undone.
func (s *Simulator) DropSince(mark int) {
	for k := mark; k < s.arena.n; k++ {
		p := s.arena.at(k)
		delete(s.moved, &p.info)
		*p = Pod{}
	}
	s.arena.n = mark
}

// Miss is why a pod did not fit: the first destination tried (-1 when
// there was none) and its answer.
type Miss struct {
	Node   int32
	Result predicates.Result
}

// FitsAlone looks, in the pod's destination order, for a node other than
// self that passes the checks depending on the destination alone
// (resources, taints, node affinity, ports), starting at the hint of the
// pod's shape, and moves the hint up to it.
//
// Nodes only fill up as the caller commits removals, so a destination that
// failed these checks for a shape fails them for good: the hint is the first
// destination that may still fit the shape, and siblings of a pod that fit
// nowhere fail at once. Nodes skipped without a check (self) are never
// jumped over. Call it only while the snapshot holds committed changes:
// placements that are later undone would free room behind the hint.
func (s *Simulator) FitsAlone(self int32, p *Pod) (Miss, bool) {
	h := p.hint
	dests := s.orders[p.order]
	first := Miss{Node: -1}
	if s.Revisit {
		if m, ok, found := s.revisit(self, p, dests); found {
			return m, ok
		} else if m.Node >= 0 {
			first = m
		}
	}
	if h.from >= len(dests) {
		if first.Node >= 0 {
			h.miss = first
		}
		return h.miss, false
	}
	skipped := -1
	for j := h.from; j < len(dests); j++ {
		d := dests[j]
		if d == self {
			if s.Revisit {
				h.skipped = append(h.skipped, int32(j))
			} else {
				skipped = j
			}
			continue
		}
		if s.gone[d] || first.Node >= 0 && p.Check.LacksRoom(s.nodes[d]) {
			continue
		}
		if r := p.Check.CheckNodeLocal(s.nodes[d]); !r.Fits() {
			if first.Node < 0 {
				first = Miss{Node: d, Result: r}
			}
			continue
		}
		h.advance(j, skipped)
		return Miss{}, true
	}
	h.advance(len(dests), skipped)
	if first.Node < 0 {
		first = h.miss // nothing left to try: say what failed before
	}
	h.miss = first
	return first, false
}

// revisit checks the positions hints jumped over (Revisit): a node that
// fits ends the search, one that does not is dropped for good. found is
// false when none fits; m is then the first that failed, if any.
func (s *Simulator) revisit(self int32, p *Pod, dests []int32) (m Miss, ok, found bool) {
	h := p.hint
	m = Miss{Node: -1}
	kept := h.skipped[:0]
	for k, j := range h.skipped {
		d := dests[j]
		if d == self || s.gone[d] {
			kept = append(kept, j)
			continue
		}
		if m.Node >= 0 && p.Check.LacksRoom(s.nodes[d]) {
			continue
		}
		if r := p.Check.CheckNodeLocal(s.nodes[d]); !r.Fits() {
			if m.Node < 0 {
				m = Miss{Node: d, Result: r}
			}
			continue
		}
		kept = append(kept, h.skipped[k:]...)
		h.skipped = kept
		return Miss{}, true, true
	}
	h.skipped = kept
	return m, false, false
}

// Place binds p to the first destination from the cursor on, wrapping
// around, that passes every check, and moves the cursor there; or returns
// -1 and the answer of the first destination tried. The cursor is a
// position in the pod's destination order; callers start it at Hint.
func (s *Simulator) Place(p *Pod, cursor *int) (int32, Miss) {
	first := Miss{Node: -1}
	dests := s.orders[p.order]
	n := len(dests)
	for k, j := 0, *cursor; k < n; k, j = k+1, j+1 {
		if j >= n {
			j = 0
		}
		d := dests[j]
		if s.gone[d] {
			continue
		}
		ni := s.nodes[d]
		if first.Node >= 0 && p.Check.LacksRoom(ni) {
			continue // fails Check too; the answer reported is the first's
		}
		if r := p.Check.Check(ni); !r.Fits() {
			if first.Node < 0 {
				first = Miss{Node: d, Result: r}
			}
			continue
		}
		if err := p.Check.Place(&p.info, ni); err != nil {
			return -1, Miss{Node: d, Result: predicates.Result{Predicate: predicates.NodeName,
				Reason: predicates.ReasonInvalidPod, Detail: err.Error()}}
		}
		*cursor = j
		return d, Miss{}
	}
	return -1, first
}

// Hint is the position in p's destination order before which no
// destination passes the checks of FitsAlone for p's shape.
func (p *Pod) Hint() int { return p.hint.from }

// hint is, for one pod shape, the position in its destination order before
// which every destination is known not to fit it.
type hint struct {
	from int
	// skipped are positions before from not checked yet (Revisit).
	skipped []int32
	// miss is why the shape fit nowhere, once it did; node -1 before.
	miss Miss
}

func (h *hint) advance(to, skipped int) {
	if skipped >= 0 && skipped < to {
		to = skipped
	}
	h.from = to
}

// shape identifies pods the node-local checks treat alike: pods of one
// controller with the same requests, following the same destination order.
// A pod without a controller is its own shape. A wrong match could only keep
// a node, never remove one.
type shape struct {
	owner                types.UID
	order                int
	cpu, memory, storage int64
	scalars, scalarSum   int64
}

func (s *Simulator) hintFor(pi *snapshot.PodInfo, order int) *hint {
	ref := metav1.GetControllerOfNoCopy(pi.Pod)
	if ref == nil {
		return &hint{miss: Miss{Node: -1}}
	}
	sh := shape{owner: ref.UID, order: order, cpu: pi.Requests.MilliCPU, memory: pi.Requests.Memory,
		storage: pi.Requests.EphemeralStorage, scalars: int64(len(pi.Requests.Scalar))}
	for _, v := range pi.Requests.Scalar {
		sh.scalarSum += v
	}
	if s.hints == nil {
		s.hints = map[shape]*hint{}
	}
	h := s.hints[sh]
	if h == nil {
		h = &hint{miss: Miss{Node: -1}}
		s.hints[sh] = h
	}
	return h
}

const arenaChunk = 512

// podArena hands out Pods from fixed-size chunks, so their addresses stay
// valid while the snapshot refers to them.
type podArena struct {
	chunks [][]Pod
	n      int
}

func (a *podArena) at(k int) *Pod { return &a.chunks[k/arenaChunk][k%arenaChunk] }

func (a *podArena) alloc() *Pod {
	if a.n/arenaChunk == len(a.chunks) {
		a.chunks = append(a.chunks, make([]Pod, arenaChunk))
	}
	p := a.at(a.n)
	a.n++
	return p
}

// reset empties the arena and drops what the copies refer to, so a loop's
// snapshot does not outlive it.
func (a *podArena) reset() {
	for c := 0; c*arenaChunk < a.n; c++ {
		clear(a.chunks[c][:min(arenaChunk, a.n-c*arenaChunk)])
	}
	a.n = 0
}
