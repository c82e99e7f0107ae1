package scaledown

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// revalidate makes the chosen removals hold on their own. The simulation
// removed every unneeded node in turn, each on a snapshot where the nodes
// before it were already gone and their pods moved; but only some of them
// are removed now. A removal simulated after a node that waits may have
// counted on it: a pod placed next to a required partner that only arrived
// from the waiting node, or in room its departure freed elsewhere. When
// such an order occurs, the chosen removals alone are simulated again, in
// the same order, on the snapshot as it was before the simulation (the
// fork that Plan opened for it); those that no longer succeed wait for the
// others (ReasonDependsOnWaitingNodes) and keep their unneeded clocks.
// Removals simulated before any waiting node are unaffected, so nothing is
// simulated twice when no node waits. A removal dropped frees its place
// (parallelism, drain slot, disruption budget) for the nodes refused one,
// which are then granted and simulated again with the others, until no
// chosen removal is dropped.
func (s *session) revalidate() {
	for s.dependsOnWaiting() {
		if s.resimulateChosen() == 0 || len(s.refused) == 0 {
			break
		}
		s.grant(s.refusedRemovals())
	}
	s.settleRefused()
}

// resimulateChosen simulates the chosen removals alone again, in
// simulation order, on the snapshot as it was before the simulation; those
// that no longer succeed wait for the others. It returns how many it
// dropped.
func (s *session) resimulateChosen() int {
	var chosen []int32
	for ri := range s.removals {
		if i := s.removals[ri].node; s.nodes[i].deleted {
			chosen = append(chosen, i)
		}
	}
	// Refused removals are renumbered by the new simulation: remember
	// them by node.
	refusedNodes := make([]int32, len(s.refused))
	for k, rf := range s.refused {
		refusedNodes[k] = s.removals[rf.removal].node
	}
	_ = s.snap.Revert() // the simulation's fork: back to the nodes as they are
	s.snap.Fork()
	s.sim.Release()
	s.sim.Start(s.snap)
	s.sim.AddOrder(s.dests)
	s.judge.Ctx.Budgets = drain.NewBudgets(s.in.PDBs)
	s.removals, s.moves, s.daemonSetPods, s.rehops = s.removals[:0], s.moves[:0], s.daemonSetPods[:0], s.rehops[:0]
	dropped := 0
	for _, i := range chosen {
		st := &s.nodes[i]
		st.deleted, st.removal = false, -1
		keptBefore := len(s.kept)
		if s.simulate(i) {
			st.deleted = true
			continue
		}
		dropped++
		s.dependsOnOthers(i, keptBefore)
	}
	// A node refused a place is simulated again too, after the chosen
	// ones, so that it can take a place freed by one dropped.
	kept := s.refused[:0]
	for k, i := range refusedNodes {
		rf := s.refused[k]
		keptBefore := len(s.kept)
		if s.simulate(i) {
			rf.removal = s.nodes[i].removal
			kept = append(kept, rf)
			continue
		}
		s.dependsOnOthers(i, keptBefore)
	}
	s.refused = kept
	return dropped
}

// dependsOnOthers makes node i, whose simulation failed with the reason
// last kept (after keptBefore), wait for the unneeded nodes that wait.
func (s *session) dependsOnOthers(i int32, keptBefore int) {
	st := &s.nodes[i]
	why := s.kept[len(s.kept)-1].Message
	s.kept = s.kept[:keptBefore]
	since, _ := s.p.tracker.Since(st.name())
	st.waiting = true
	s.unneeded = append(s.unneeded, Unneeded{Node: st.name(), Group: st.groupID(), Since: since,
		Empty: st.empty, Reason: ReasonDependsOnWaitingNodes})
	s.keep(i, ReasonDependsOnWaitingNodes, fmt.Sprintf(
		"unneeded long enough, but its pods fit elsewhere only once unneeded nodes that wait are removed: %s", why))
}

func (s *session) refusedRemovals() []int32 {
	out := make([]int32, len(s.refused))
	for k, rf := range s.refused {
		out[k] = rf.removal
	}
	return out
}

// dependsOnWaiting: some chosen removal was simulated after an unneeded
// node that waits.
func (s *session) dependsOnWaiting() bool {
	waited := false
	for ri := range s.removals {
		switch st := &s.nodes[s.removals[ri].node]; {
		case !st.deleted:
			waited = true
		case waited:
			return true
		}
	}
	return false
}
