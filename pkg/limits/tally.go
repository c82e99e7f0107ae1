package limits

import "github.com/gpuscale/gpuscale/pkg/snapshot"

// Tally sums a snapshot's nodes (Of) loop after loop, keeping what each
// node contributes while it is the same NodeInfo: a node that changes is
// a new NodeInfo (snapshot.UpdateNode), so only nodes added or replaced
// since the last call are counted from their resource lists. Where the
// snapshot has DRA devices, which a node's slices change without the
// node, every node is counted afresh. Nodes not seen in a call are
// forgotten. The zero value is ready; not safe for concurrent use.
type Tally struct {
	nodes map[*snapshot.NodeInfo]*tallied
	call  uint64
}

type tallied struct {
	t    Totals
	call uint64
}

// Of is limits.Of(s).
func (c *Tally) Of(s *snapshot.Snapshot) Totals {
	if s.HasDRA() {
		clear(c.nodes)
		return Of(s)
	}
	if c.nodes == nil {
		c.nodes = map[*snapshot.NodeInfo]*tallied{}
	}
	c.call++
	var t Totals
	for _, ni := range s.Nodes() {
		e := c.nodes[ni]
		if e == nil {
			e = &tallied{t: NodeTotals(ni.Node)}
			c.nodes[ni] = e
		}
		e.call = c.call
		t.Add(e.t, 1)
	}
	for ni, e := range c.nodes {
		if e.call != c.call {
			delete(c.nodes, ni)
		}
	}
	return t
}
