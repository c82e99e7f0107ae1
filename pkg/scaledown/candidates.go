package scaledown

import (
	"slices"

	rsim "github.com/gpuscale/gpuscale/pkg/scaledown/removal"
)

// rankCandidates runs the drain rules over each candidate's pods, keeps the
// nodes with a pod that cannot move, and orders the rest for simulation:
// empty nodes first (they free a node at no risk), then nodes already
// unneeded in the previous loop (so that their clocks keep running when
// limits stop the simulation early, rather than two nodes taking turns),
// then by utilization, lowest first, then by name.
func (s *session) rankCandidates() {
	kept := s.cands[:0]
	for _, i := range s.cands {
		st := &s.nodes[i]
		blocked, moving := s.drainVerdicts(i)
		if blocked {
			st.candidate = false
			continue
		}
		st.empty = moving == 0
		_, st.wasUnneeded = s.p.tracker.Since(st.name())
		kept = append(kept, i)
	}
	s.cands = kept
	for _, i := range s.cands {
		st := &s.nodes[i]
		st.rank = rsim.Rank{Empty: st.empty, Before: st.wasUnneeded, Util: st.util.Value, Name: st.name()}
	}
	slices.SortFunc(s.cands, func(a, b int32) int { return rsim.CompareRanks(&s.nodes[a].rank, &s.nodes[b].rank) })
}

// drainVerdicts judges the pods of node i with the PodDisruptionBudgets as
// they stand at the start of the loop. A blocked node is kept. The verdicts
// are remembered for the simulation (rsim.Judge), which judges again only
// the nodes whose moving pods fall under a budget, and only once budgets
// have been drawn on.
func (s *session) drainVerdicts(i int32) (blocked bool, moving int) {
	st := &s.nodes[i]
	if b, ok := s.judge.First(st.ni, &st.judged); !ok {
		s.keepBlocked(i, b)
		return true, 0
	}
	return false, st.judged.Moving
}

func (s *session) keepBlocked(i int32, b rsim.Blocked) {
	k := s.keep(i, ReasonBlockedByPod, b.Message())
	k.Pod, k.PodCode = b.Pod, b.Verdict.Code
}

// buildDestinations orders the nodes moving pods may go to: first the nodes
// that are not candidates, by name, since they stay whatever happens; then
// the candidates in reverse simulation order, so pods land on the nodes
// least likely to be removed later in the loop.
func (s *session) buildDestinations() {
	for i := range s.nodes {
		if st := &s.nodes[i]; st.dest && !st.candidate {
			s.dests = append(s.dests, int32(i))
		}
	}
	for k := len(s.cands) - 1; k >= 0; k-- {
		if i := s.cands[k]; s.nodes[i].dest {
			s.dests = append(s.dests, i)
		}
	}
	s.sim.AddOrder(s.dests)
}
