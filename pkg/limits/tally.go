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
	nodes snapshot.NodeMemo[struct{}, Totals]
}

// Of is limits.Of(s).
func (c *Tally) Of(s *snapshot.Snapshot) Totals {
	defer c.nodes.EndPass()
	if s.HasDRA() {
		return Of(s)
	}
	var t Totals
	for _, ni := range s.Nodes() {
		n, ok := c.nodes.Get(ni, struct{}{})
		if !ok {
			n = NodeTotals(ni.Node)
			c.nodes.Put(ni, struct{}{}, n)
		}
		t.Add(n, 1)
	}
	return t
}
