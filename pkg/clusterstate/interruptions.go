package clusterstate

import (
	"maps"
	"slices"
	"time"
)

// Interruption is a node the cloud is taking away (a spot interruption, a
// rebalance recommendation, a termination the node was told of): first
// seen at Since, by the signal named.
type Interruption struct {
	Node, Group, Signal string
	Since               time.Time
}

// RecordInterruption notes that a node carries an interruption signal at
// now, and returns the record: the first sighting is kept, so the notice
// counts from when the signal was first seen, and each node counts once in
// its group's rate.
func (s *State) RecordInterruption(node, group, signal string, now time.Time) Interruption {
	if in, ok := s.interrupted[node]; ok {
		return in
	}
	in := Interruption{Node: node, Group: group, Signal: signal, Since: now}
	s.interrupted[node] = in
	if group != "" {
		s.interruptions[group] = append(s.interruptions[group], now)
	}
	return in
}

// ForgetInterruptions drops the records of nodes not in present (gone with
// their instance, or no longer signalled) and, per group, interruption
// times before since.
func (s *State) ForgetInterruptions(present map[string]bool, since time.Time) {
	for _, n := range slices.Sorted(maps.Keys(s.interrupted)) {
		if !present[n] {
			delete(s.interrupted, n)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(s.interruptions)) {
		kept := s.interruptions[g][:0]
		for _, t := range s.interruptions[g] {
			if !t.Before(since) {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			delete(s.interruptions, g)
		} else {
			s.interruptions[g] = kept
		}
	}
}

// Interruptions counts a group's interruptions kept (those since the last
// ForgetInterruptions' time).
func (s *State) Interruptions(group string) int { return len(s.interruptions[group]) }
