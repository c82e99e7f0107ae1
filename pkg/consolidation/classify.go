package consolidation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
)

// classifyNodes looks at every node once: whether pods may move onto it,
// and whether it may move at all before any simulation. Nodes that may not
// are kept with their reason; the others are judged pod by pod and become
// candidates.
func (s *session) classifyNodes() {
	for _, ni := range s.snap.Nodes() {
		s.nodes = append(s.nodes, nodeState{ni: ni})
	}
	s.room.init(s)
	for i := range s.nodes {
		st := &s.nodes[i]
		node := st.ni.Node
		st.group = s.snap.NodeGroup(st.ni.Group)
		if st.group != nil {
			st.price = st.group.PricePerHour
		}
		st.since = s.in.State.Since[node.Name]
		st.gpus = gpu.Requested(&st.ni.Allocatable)
		st.freeGPUs = st.gpus - gpu.Requested(&st.ni.Requested)
		st.util = utilization(st)
		if gpu.IsGPUNode(node) {
			st.kind = limits.Type(node)
		}
		ready := s.in.Readiness.State(s.snap, s.in.Now, st.ni, st.group) == clusterstate.NodeReady && !gpu.Awaiting(node)
		gone := s.deleting[node.Name] || s.replacing[node.Name] ||
			disruption.TaintedToBeDeleted(node, s.in.Now, s.opts.MaxCloudProviderNodeDeletionTime)
		// Pods go only to nodes that run them now and stay; the new nodes
		// of a replacement in flight are kept for the pods they replace.
		st.dest = ready && !gone && !s.launched[node.Name]
		if !gone {
			s.room.count(st)
		}
		if reason, msg := s.eligibility(st, ready); reason != "" {
			s.keep(int32(i), reason, msg)
			continue
		}
		if s.judgePods(int32(i)) {
			st.candidate = true
			s.cands = append(s.cands, int32(i))
		}
	}
}

// eligibility returns why a node cannot move whatever its pods, or "".
func (s *session) eligibility(st *nodeState, ready bool) (Reason, string) {
	node := st.ni.Node
	name := node.Name
	switch {
	case s.deleting[name] || disruption.TaintedToBeDeleted(node, s.in.Now, s.opts.MaxCloudProviderNodeDeletionTime):
		return ReasonBeingDeleted, "node is being removed already"
	case s.replacing[name]:
		return ReasonBeingReplaced, "a replacement in flight drains this node once its new nodes are Ready"
	case s.launched[name]:
		return ReasonReplacementNode, "node was launched to replace others and waits for their pods"
	}
	if why, msg := removal.Exempt(st.ni, st.group); why != "" {
		return Reason(why), msg
	}
	if !ready {
		return ReasonNotReady, "node is not Ready or has not advertised its GPUs yet; scale-down judges it"
	}
	g := s.room.group(st.group)
	if !g.policy.Open {
		return ReasonOutsideWindow, fmt.Sprintf("node group %s is disrupted only in its windows (%s), none open now",
			st.group.ID, strings.Join(g.policy.Windows, " | "))
	}
	// Used up before any move of this pass: no need to simulate.
	return s.room.disrupt(g, 1)
}

// utilization is requested over allocatable GPUs on a GPU node, the larger
// of cpu and memory on other nodes: what consolidation weighs nodes by.
func utilization(st *nodeState) float64 {
	if st.gpus > 0 {
		return float64(st.gpus-st.freeGPUs) / float64(st.gpus)
	}
	a, r := &st.ni.Allocatable, &st.ni.Requested
	return max(ratio(r.MilliCPU, a.MilliCPU), ratio(r.Memory, a.Memory))
}

func ratio(used, alloc int64) float64 {
	if alloc <= 0 {
		return 0
	}
	return float64(used) / float64(alloc)
}

// judgePods runs the drain rules over node i's pods with the
// PodDisruptionBudgets as they stand at the start of the pass
// (removal.Judge); a blocked node is kept, and so is one with a pod that
// runs to completion (safe-to-evict "on-completion"), as a voluntary move
// must not wait for it.
func (s *session) judgePods(i int32) bool {
	st := &s.nodes[i]
	if b, ok := s.judge.First(st.ni, &st.judged); !ok {
		s.keepBlocked(i, b)
		return false
	}
	st.empty = st.judged.Moving == 0
	return true
}

// keepBlocked keeps node i for a pod a drain rule blocks, once: a node
// judged again in several trials of a pass is reported the first time.
func (s *session) keepBlocked(i int32, b removal.Blocked) {
	if s.nodes[i].fate != undecided {
		return
	}
	k := s.keep(i, ReasonBlockedByPod, b.Message())
	k.Pod, k.PodCode = b.Pod, b.Verdict.Code
}

// rankCandidates orders the candidates: empty nodes first (they go at no
// risk), then nodes found consolidatable in the previous pass (so their
// clocks keep running when budgets stop the pass early), then the least
// used first (on GPU nodes by GPUs, so the node with the fewest GPUs in use
// empties first and whole free GPUs gather on the others), then the dearer
// first, then by name.
func (s *session) rankCandidates() {
	for _, i := range s.cands {
		st := &s.nodes[i]
		st.rank = removal.Rank{Empty: st.empty, Before: !st.since.IsZero(), Util: st.util, Price: st.price, Name: st.name()}
	}
	slices.SortFunc(s.cands, func(a, b int32) int { return removal.CompareRanks(&s.nodes[a].rank, &s.nodes[b].rank) })
}

func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// buildOrders sets the two destination orders. Pods that ask for GPUs try
// GPU nodes with the fewest free GPUs first (the tightest fit), so free
// GPUs gather whole on fewer nodes. Pods that do not try nodes without GPUs
// first and GPU nodes last, so CPU work leaves GPU nodes rather than keeping
// them. Within each, nodes that are not candidates come first (they stay
// whatever happens), then the most used, which are weighed for moving last.
func (s *session) buildOrders() {
	var gpuDests, cpuDests []int32
	for i := range s.nodes {
		st := &s.nodes[i]
		if !st.dest {
			continue
		}
		if st.gpus > 0 {
			gpuDests = append(gpuDests, int32(i))
		}
		cpuDests = append(cpuDests, int32(i))
	}
	stays := func(x, y *nodeState) int {
		if x.candidate != y.candidate {
			return boolFirst(!x.candidate)
		}
		if c := cmp.Compare(y.util, x.util); c != 0 {
			return c
		}
		return cmp.Compare(x.name(), y.name())
	}
	slices.SortFunc(gpuDests, func(a, b int32) int {
		x, y := &s.nodes[a], &s.nodes[b]
		if c := cmp.Compare(x.freeGPUs, y.freeGPUs); c != 0 {
			return c
		}
		return stays(x, y)
	})
	slices.SortFunc(cpuDests, func(a, b int32) int {
		x, y := &s.nodes[a], &s.nodes[b]
		if (x.gpus > 0) != (y.gpus > 0) {
			return boolFirst(x.gpus == 0)
		}
		return stays(x, y)
	})
	s.gpuOrder = s.sim.AddOrder(gpuDests)
	s.cpuOrder = s.sim.AddOrder(cpuDests)
}
