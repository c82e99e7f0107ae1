package engine

import (
	v1 "k8s.io/api/core/v1"
	"math/rand"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// kube-scheduler's requests for pods that set none, used in scoring only
// (NonZeroRequested).
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 << 20
)

// schedulerState is the placement model: its scoring, the seeded source
// that breaks ties, and what it keeps between pods: where the next search
// starts, as kube-scheduler rotates it, and which workloads found no node
// since room last grew.
type schedulerState struct {
	cfg       scenario.Scheduler
	rng       *rand.Rand
	nextStart int
	// capacity counts the changes that can make room (a pod leaving, a
	// node arriving or getting its GPUs); failedAt[key] is capacity+1 when
	// a pod of the workload last found no node.
	capacity uint64
	failedAt map[string]uint64
}

// roomGrew notes a change after which pods that found no node may fit.
func (s *schedulerState) roomGrew() { s.capacity++ }

// schedulePass tries the pending pods in queue order, as kube-scheduler's
// queue would after a cluster change. A workload whose pod found no node is
// not tried again until room grows: its pods are identical, and binding
// only takes room.
func (e *Engine) schedulePass() error {
	e.pace.schedDirty = false
	if len(e.work.pending) == 0 {
		return nil
	}
	if e.sched.failedAt == nil {
		e.sched.failedAt = map[string]uint64{}
	}
	mark := e.sched.capacity + 1
	checker := predicates.New(e.snap)
	kept := e.work.pending[:0]
	for _, p := range e.work.pending {
		if p.node != "" {
			continue // bound with its gang
		}
		if g := p.gang; g != nil {
			if g.gated || e.sched.failedAt[gangKey(g)] == mark {
				kept = append(kept, p)
				continue
			}
			ok, err := e.placeGang(checker, g)
			if err != nil {
				return err
			}
			if !ok {
				e.sched.failedAt[gangKey(g)] = mark
				kept = append(kept, p)
			}
			continue
		}
		if e.sched.failedAt[p.w.key] == mark {
			kept = append(kept, p)
			continue
		}
		node := e.sched.pickNode(e.snap, checker, p.pi)
		if node == nil {
			e.sched.failedAt[p.w.key] = mark
			kept = append(kept, p)
			continue
		}
		if err := e.bind(p, node); err != nil {
			return err
		}
	}
	for i := len(kept); i < len(e.work.pending); i++ {
		e.work.pending[i] = nil
	}
	e.work.pending = kept
	return nil
}

// bind places a pod on a node and starts its run.
func (e *Engine) bind(p *simPod, node *snapshot.NodeInfo) error {
	p.pi.Pod.Spec.NodeName = node.Name()
	if err := e.snap.AddPodInfo(p.pi, node.Name()); err != nil {
		return err
	}
	p.node, p.boundAt = node.Name(), e.now
	if err := p.w.servingBound(p, e.now); err != nil {
		return err
	}
	p.w.version++
	p.waited = true
	e.rec.dequeued(p, e.now)
	e.rec.gpuAllocated += p.w.gpus
	if p.duration > 0 {
		e.events.push(&event{at: e.now + p.remaining, kind: evFinish, pod: p, gen: p.gen})
	}
	if p.gang != nil {
		e.gangBound(p.gang)
	}
	e.pace.changed++
	return nil
}

// pickNode finds the feasible nodes and returns the best scored, ties
// broken at random with the scenario's seed. Like kube-scheduler it stops
// after enough feasible nodes (percentageOfNodesToScore's adaptive
// default) and starts each search where the previous one ended.
func (s *schedulerState) pickNode(snap *snapshot.Snapshot, checker *predicates.Checker, pi *snapshot.PodInfo) *snapshot.NodeInfo {
	nodes := snap.Nodes()
	n := len(nodes)
	if n == 0 {
		return nil
	}
	want := feasibleToFind(n)
	pc := checker.PreparePodInfo(pi)
	var best *snapshot.NodeInfo
	bestScore, ties, found := int64(-1), 0, 0
	start := s.nextStart % n
	visited := 0
	for ; visited < n && found < want; visited++ {
		ni := nodes[(start+visited)%n]
		if !pc.Check(ni).Fits() {
			continue
		}
		found++
		sc := s.score(pi, ni)
		switch {
		case sc > bestScore:
			best, bestScore, ties = ni, sc, 1
		case sc == bestScore:
			ties++
			if s.rng.Intn(ties) == 0 {
				best = ni
			}
		}
	}
	s.nextStart = (start + visited) % n
	return best
}

// feasibleToFind is kube-scheduler's numFeasibleNodesToFind with the
// default (adaptive) percentageOfNodesToScore.
func feasibleToFind(n int) int {
	if n < 100 {
		return n
	}
	pct := 50 - n/125
	if pct < 5 {
		pct = 5
	}
	k := n * pct / 100
	if k < 100 {
		k = 100
	}
	return k
}

// score is NodeResourcesFit's score (0..100) with the scenario's strategy
// and resource weights; resources the node does not have are skipped.
func (s *schedulerState) score(pi *snapshot.PodInfo, ni *snapshot.NodeInfo) int64 {
	var sum, weights int64
	most := s.cfg.Scoring == scenario.MostAllocated
	for name, w := range s.cfg.Resources {
		alloc := ni.Allocatable.Get(name)
		if alloc <= 0 {
			continue
		}
		req := ni.Requested.Get(name) + podRequest(pi, name)
		if req > alloc {
			req = alloc
		}
		v := (alloc - req) * 100 / alloc
		if most {
			v = req * 100 / alloc
		}
		sum += v * w
		weights += w
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

func podRequest(pi *snapshot.PodInfo, name v1.ResourceName) int64 {
	v := pi.Requests.Get(name)
	switch {
	case v != 0:
		return v
	case name == v1.ResourceCPU:
		return defaultMilliCPURequest
	case name == v1.ResourceMemory:
		return defaultMemoryRequest
	}
	return 0
}
