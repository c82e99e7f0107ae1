package snapshot

// NodeMemo keeps a value derived from each node from one pass to the next,
// with the key it was derived under (the node's Stamp, the options used):
// Get answers only for the same NodeInfo and an equal key. A node that
// changes is a new NodeInfo (UpdateNode) and one whose pods change has a
// new Stamp, so a planner that keys by what its value reads recomputes only
// the nodes that changed. Nodes not asked for or given in a pass are
// forgotten when it ends (EndPass). The zero value is ready; not safe for
// concurrent use.
type NodeMemo[K comparable, V any] struct {
	nodes map[*NodeInfo]*memoEntry[K, V]
	pass  uint64
}

type memoEntry[K comparable, V any] struct {
	key  K
	val  V
	pass uint64
}

// Get returns the value kept for ni under key.
func (m *NodeMemo[K, V]) Get(ni *NodeInfo, key K) (V, bool) {
	if e := m.nodes[ni]; e != nil && e.key == key {
		e.pass = m.pass
		return e.val, true
	}
	var zero V
	return zero, false
}

// Put keeps v for ni under key.
func (m *NodeMemo[K, V]) Put(ni *NodeInfo, key K, v V) {
	if m.nodes == nil {
		m.nodes = map[*NodeInfo]*memoEntry[K, V]{}
	}
	m.nodes[ni] = &memoEntry[K, V]{key: key, val: v, pass: m.pass}
}

// Forget drops what is kept for ni.
func (m *NodeMemo[K, V]) Forget(ni *NodeInfo) { delete(m.nodes, ni) }

// EndPass forgets the nodes not asked for or given since the last EndPass.
func (m *NodeMemo[K, V]) EndPass() {
	for ni, e := range m.nodes {
		if e.pass != m.pass {
			delete(m.nodes, ni)
		}
	}
	m.pass++
}

// Len is the number of nodes kept.
func (m *NodeMemo[K, V]) Len() int { return len(m.nodes) }
