package snapshot

import (
	v1 "k8s.io/api/core/v1"
)

// NodeInfo is a node with the pods bound to it and their summed requests.
// It is owned by a Snapshot: read it freely, change it only through the
// Snapshot so that indexes and the undo log stay right.
type NodeInfo struct {
	Node *v1.Node
	// Group is the id of the node group the node belongs to, or "".
	Group string
	// Pods are the pods bound to the node, in the order they were added.
	Pods []*PodInfo
	// Allocatable is the node's status.allocatable.
	Allocatable Resource
	// Requested is the sum of the requests of Pods.
	Requested Resource
	// PodsWithRequiredAntiAffinity are the pods of Pods that carry required
	// pod anti-affinity, which every incoming pod must respect.
	PodsWithRequiredAntiAffinity []*PodInfo
	ports                        []usedPort
	// stamp is the snapshot's generation when a pod was last bound to the
	// node or unbound from it (see Stamp).
	stamp uint64
}

type usedPort struct {
	HostPort
	refs int
}

func newNodeInfo(node *v1.Node, group string) *NodeInfo {
	return &NodeInfo{Node: node, Group: group, Allocatable: ResourceFromList(node.Status.Allocatable)}
}

// Stamp changes whenever the snapshot binds a pod to the node or unbinds
// one, reverts included, and never returns to an earlier value; a node
// added or replaced (UpdateNode) is a new NodeInfo. What is derived from a
// node and its pods alone stays current while its Stamp does.
func (n *NodeInfo) Stamp() uint64 { return n.stamp }

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// Free returns allocatable minus requested for one resource.
func (n *NodeInfo) Free(name v1.ResourceName) int64 {
	return n.Allocatable.Get(name) - n.Requested.Get(name)
}

// PortConflict reports whether binding p would clash with a port already in
// use: 0.0.0.0 clashes with every address, others with themselves and 0.0.0.0.
func (n *NodeInfo) PortConflict(p HostPort) bool {
	for i := range n.ports {
		u := &n.ports[i].HostPort
		if u.Port != p.Port || u.Protocol != p.Protocol {
			continue
		}
		if p.IP == bindAllIP || u.IP == bindAllIP || u.IP == p.IP {
			return true
		}
	}
	return false
}

// addPod inserts pi at position at in Pods and antiAt in
// PodsWithRequiredAntiAffinity; -1 appends. Reverts pass the positions a
// removal reported, so order is restored exactly.
func (n *NodeInfo) addPod(pi *PodInfo, at, antiAt int) {
	n.Pods = insertAt(n.Pods, pi, at)
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = insertAt(n.PodsWithRequiredAntiAffinity, pi, antiAt)
	}
	n.Requested.AddResource(&pi.Requests, 1)
	for _, p := range pi.HostPorts {
		n.addPort(p)
	}
}

// removePod removes pi, keeping the order of the remaining pods, and returns
// where it was in Pods and in PodsWithRequiredAntiAffinity (-1 if absent).
func (n *NodeInfo) removePod(pi *PodInfo) (at, antiAt int) {
	n.Pods, at = removeFromSlice(n.Pods, pi)
	n.PodsWithRequiredAntiAffinity, antiAt = removeFromSlice(n.PodsWithRequiredAntiAffinity, pi)
	n.Requested.AddResource(&pi.Requests, -1)
	for _, p := range pi.HostPorts {
		n.removePort(p)
	}
	return at, antiAt
}

func insertAt(s []*PodInfo, pi *PodInfo, at int) []*PodInfo {
	if at < 0 || at >= len(s) {
		return append(s, pi)
	}
	s = append(s, nil)
	copy(s[at+1:], s[at:])
	s[at] = pi
	return s
}

func removeFromSlice(s []*PodInfo, pi *PodInfo) ([]*PodInfo, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == pi {
			copy(s[i:], s[i+1:])
			s[len(s)-1] = nil
			return s[:len(s)-1], i
		}
	}
	return s, -1
}

func (n *NodeInfo) addPort(p HostPort) {
	for i := range n.ports {
		if n.ports[i].HostPort == p {
			n.ports[i].refs++
			return
		}
	}
	n.ports = append(n.ports, usedPort{HostPort: p, refs: 1})
}

func (n *NodeInfo) removePort(p HostPort) {
	for i := range n.ports {
		if n.ports[i].HostPort == p {
			if n.ports[i].refs--; n.ports[i].refs == 0 {
				n.ports = append(n.ports[:i], n.ports[i+1:]...)
			}
			return
		}
	}
}
