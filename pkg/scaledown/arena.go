package scaledown

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// movingPod is a pod on its way to another node in the simulation. It is a
// shallow copy of the pod with spec.nodeName cleared, because the
// scheduler's checks refuse a pod bound to a different node. Copies live in
// a podArena the Planner reuses from loop to loop, so moving tens of
// thousands of pods allocates little more than their PodChecks.
type movingPod struct {
	pod   v1.Pod
	info  snapshot.PodInfo
	orig  *v1.Pod
	check *predicates.PodCheck
	// hint is shared by the pods of the pod's shape.
	hint *shapeHint
	// move indexes session.moves once a removal commits the move, else -1.
	move int32
}

const arenaChunk = 512

// podArena hands out movingPods from fixed-size chunks, so their addresses
// stay valid while the snapshot refers to them.
type podArena struct {
	chunks [][]movingPod
	n      int
}

func (a *podArena) at(k int) *movingPod { return &a.chunks[k/arenaChunk][k%arenaChunk] }

func (a *podArena) alloc() *movingPod {
	if a.n/arenaChunk == len(a.chunks) {
		a.chunks = append(a.chunks, make([]movingPod, arenaChunk))
	}
	mp := a.at(a.n)
	a.n++
	return mp
}

// reset empties the arena and drops what the copies refer to, so a loop's
// snapshot does not outlive it.
func (a *podArena) reset() {
	for c := 0; c*arenaChunk < a.n; c++ {
		clear(a.chunks[c][:min(arenaChunk, a.n-c*arenaChunk)])
	}
	a.n = 0
}

// newMovingPod copies pi into the arena and prepares its scheduling check.
func (s *session) newMovingPod(pi *snapshot.PodInfo) *movingPod {
	mp := s.p.arena.alloc()
	mp.pod = *pi.Pod
	mp.pod.Spec.NodeName = ""
	mp.info = *pi
	mp.info.Pod = &mp.pod
	mp.orig = pi.Pod
	mp.check = s.checker.PreparePodInfo(&mp.info)
	mp.hint = s.hintFor(pi)
	mp.move = -1
	s.p.moved[&mp.info] = mp
	return mp
}

// dropMovingSince forgets the moving pods made after mark, when the
// simulation that made them is undone.
func (p *Planner) dropMovingSince(mark int) {
	for k := mark; k < p.arena.n; k++ {
		mp := p.arena.at(k)
		delete(p.moved, &mp.info)
		*mp = movingPod{}
	}
	p.arena.n = mark
}
