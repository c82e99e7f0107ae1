package scaledown

import "time"

// UnneededTracker remembers since when each node has been unneeded, across
// planning loops. It is pure state: the caller says what is unneeded now and
// when now is.
type UnneededTracker struct {
	nodes map[string]unneededEntry
	round uint64
}

type unneededEntry struct {
	since time.Time
	round uint64 // the last Update that listed the node
}

// NewUnneededTracker returns an empty tracker.
func NewUnneededTracker() *UnneededTracker {
	return &UnneededTracker{nodes: map[string]unneededEntry{}}
}

// Update records that exactly the nodes in names are unneeded at now: a node
// seen for the first time starts its clock at now, a node seen before keeps
// its start, and a node missing from names became needed and is forgotten.
func (t *UnneededTracker) Update(now time.Time, names []string) {
	t.round++
	for _, name := range names {
		e, ok := t.nodes[name]
		if !ok {
			e.since = now
		}
		e.round = t.round
		t.nodes[name] = e
	}
	for name, e := range t.nodes {
		if e.round != t.round {
			delete(t.nodes, name)
		}
	}
}

// Since returns when the node became unneeded, and whether it is unneeded.
func (t *UnneededTracker) Since(name string) (time.Time, bool) {
	e, ok := t.nodes[name]
	return e.since, ok
}

// Len is the number of unneeded nodes.
func (t *UnneededTracker) Len() int { return len(t.nodes) }

// Clear forgets every node, for example after a scale-up proved the
// cluster needs its capacity.
func (t *UnneededTracker) Clear() { clear(t.nodes) }
