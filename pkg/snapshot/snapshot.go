// Package snapshot holds an in-memory view of a cluster (nodes, the pods
// bound to them, node groups, namespaces and volumes) for the autoscaler's
// decisions. Changes can be tried and rolled back with Fork and Revert; every
// change is recorded in an undo log only while a fork is open, so a plain
// snapshot pays nothing for it.
//
// A Snapshot is not safe for concurrent use.
package snapshot

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Snapshot is a cluster view with indexes by node, namespace, pod label and
// topology domain.
type Snapshot struct {
	nodes      map[string]*NodeInfo
	sorted     []*NodeInfo // by name
	pods       map[podKey]*PodInfo
	podNode    map[*PodInfo]*NodeInfo
	groups     map[string]*NodeGroup
	namespaces map[string]*v1.Namespace
	pvs        map[string]*v1.PersistentVolume
	pvcs       map[string]*v1.PersistentVolumeClaim // by namespace/name
	classes    map[string]*storagev1.StorageClass
	csiNodes   map[string]*storagev1.CSINode // by node name
	dra        draStore

	// byLabel indexes pods by label for inter-pod affinity; it is built
	// on first use and kept from then on, so clusters without affinity
	// never pay for it.
	byLabel   map[labelPair]map[*PodInfo]struct{}
	domains   map[string]map[string]map[*NodeInfo]struct{} // label key -> value -> nodes
	antiNodes map[*NodeInfo]struct{}                       // nodes holding pods with required anti-affinity

	generation uint64
	// nodesGeneration is the generation of the last node added, removed or
	// replaced.
	nodesGeneration uint64
	undo            undoLog
}

type labelPair struct{ key, value string }

// podKey identifies a pod without building a "namespace/name" string.
type podKey struct{ namespace, name string }

func keyOf(pod *v1.Pod) podKey { return podKey{pod.Namespace, pod.Name} }

// New returns an empty snapshot.
func New() *Snapshot {
	return &Snapshot{
		nodes:      map[string]*NodeInfo{},
		pods:       map[podKey]*PodInfo{},
		podNode:    map[*PodInfo]*NodeInfo{},
		groups:     map[string]*NodeGroup{},
		namespaces: map[string]*v1.Namespace{},
		pvs:        map[string]*v1.PersistentVolume{},
		pvcs:       map[string]*v1.PersistentVolumeClaim{},
		classes:    map[string]*storagev1.StorageClass{},
		csiNodes:   map[string]*storagev1.CSINode{},
		domains:    map[string]map[string]map[*NodeInfo]struct{}{},
		antiNodes:  map[*NodeInfo]struct{}{},
		dra:        draStore{features: DefaultDRAFeatures()},
	}
}

// Generation changes whenever the snapshot changes, reverts included, so a
// caller can tell whether state it derived from the snapshot is still current.
func (s *Snapshot) Generation() uint64 { return s.generation }

// NodesGeneration changes whenever a node is added, removed or replaced
// (UpdateNode), reverts included, and not when only pods or other objects
// change: state derived from the nodes alone (which topology domains a pod
// may count) stays current while pods are placed.
func (s *Snapshot) NodesGeneration() uint64 { return s.nodesGeneration }

// AddNode adds a node that belongs to no node group.
func (s *Snapshot) AddNode(node *v1.Node) error { return s.AddNodeInGroup(node, "") }

// AddNodeInGroup adds a node that belongs to the node group named group ("" for none).
func (s *Snapshot) AddNodeInGroup(node *v1.Node, group string) error {
	if node == nil {
		return fmt.Errorf("node is nil")
	}
	if err := validateNode(node); err != nil {
		return fmt.Errorf("node %s: %w", node.Name, err)
	}
	if _, ok := s.nodes[node.Name]; ok {
		return fmt.Errorf("node %s: already in the snapshot", node.Name)
	}
	if group != "" {
		if _, ok := s.groups[group]; !ok {
			return fmt.Errorf("node %s: node group %q is not in the snapshot", node.Name, group)
		}
	}
	s.insertNode(newNodeInfo(node, group))
	return nil
}

// RemoveNode removes a node and every pod bound to it, releasing the pods'
// resource claims as RemovePod does.
func (s *Snapshot) RemoveNode(name string) error {
	ni, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("node %s: not in the snapshot", name)
	}
	for len(ni.Pods) > 0 {
		pi := ni.Pods[len(ni.Pods)-1]
		s.unbindPod(pi)
		if len(pi.Pod.Spec.ResourceClaims) > 0 {
			s.releaseClaims(pi.Pod)
		}
	}
	s.deleteNode(ni)
	return nil
}

// AddPod adds a pod bound to the node named in spec.nodeName.
func (s *Snapshot) AddPod(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("pod is nil")
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s: spec.nodeName: must name a node in the snapshot, got \"\"", PodKey(pod))
	}
	pi, err := NewPodInfo(pod)
	if err != nil {
		return err
	}
	return s.AddPodInfo(pi, pod.Spec.NodeName)
}

// AddPodInfo binds an already computed pod to a node. The planners use it to
// place pending pods during a simulation without copying them. The pod's
// resource claims in the snapshot are reserved for it but not allocated:
// pods whose claims need devices are placed with
// predicates.PodCheck.Place (or AddPodInfoWithClaims).
func (s *Snapshot) AddPodInfo(pi *PodInfo, nodeName string) error {
	ni, ok := s.nodes[nodeName]
	if !ok {
		return fmt.Errorf("pod %s: node %q is not in the snapshot", PodKey(pi.Pod), nodeName)
	}
	if _, dup := s.pods[keyOf(pi.Pod)]; dup {
		return fmt.Errorf("pod %s: already in the snapshot", PodKey(pi.Pod))
	}
	s.bindPod(pi, ni, -1, -1)
	if len(pi.Pod.Spec.ResourceClaims) > 0 {
		s.reserveClaims(pi.Pod, nil)
	}
	return nil
}

// RemovePod removes a pod from its node. Its resource claims are released;
// a claim no other pod holds is deallocated.
func (s *Snapshot) RemovePod(namespace, name string) error {
	pi, ok := s.pods[podKey{namespace, name}]
	if !ok {
		return fmt.Errorf("pod %s/%s: not in the snapshot", namespace, name)
	}
	s.unbindPod(pi)
	if len(pi.Pod.Spec.ResourceClaims) > 0 {
		s.releaseClaims(pi.Pod)
	}
	return nil
}

// Node returns the named node, or nil.
func (s *Snapshot) Node(name string) *NodeInfo { return s.nodes[name] }

// Nodes returns every node sorted by name. The slice is shared: do not change it.
func (s *Snapshot) Nodes() []*NodeInfo { return s.sorted }

// Pod returns a pod by namespace and name, or nil.
func (s *Snapshot) Pod(namespace, name string) *PodInfo { return s.pods[podKey{namespace, name}] }

// NodeOf returns the node a pod is bound to, or nil.
func (s *Snapshot) NodeOf(pi *PodInfo) *NodeInfo { return s.podNode[pi] }

// PodCount is the number of pods in the snapshot.
func (s *Snapshot) PodCount() int { return len(s.pods) }

// ReservePods makes room for n pods in a snapshot that holds none yet, so
// that filling it (a first sync meets every pod of a cluster) does not
// rehash its indexes as they grow. It does nothing once pods are in.
func (s *Snapshot) ReservePods(n int) {
	if len(s.pods) == 0 && n > 0 {
		s.pods = make(map[podKey]*PodInfo, n)
		s.podNode = make(map[*PodInfo]*NodeInfo, n)
	}
}

// insertNode and the functions below are the only places that change the
// cluster; each records its inverse while a fork is open.
func (s *Snapshot) insertNode(ni *NodeInfo) {
	s.nodes[ni.Name()] = ni
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].Name() >= ni.Name() })
	s.sorted = append(s.sorted, nil)
	copy(s.sorted[i+1:], s.sorted[i:])
	s.sorted[i] = ni
	for k, v := range ni.Node.Labels {
		values := s.domains[k]
		if values == nil {
			values = map[string]map[*NodeInfo]struct{}{}
			s.domains[k] = values
		}
		set := values[v]
		if set == nil {
			set = map[*NodeInfo]struct{}{}
			values[v] = set
		}
		set[ni] = struct{}{}
	}
	s.changed(change{kind: changeAddNode, node: ni})
	s.nodesGeneration = s.generation
}

func (s *Snapshot) deleteNode(ni *NodeInfo) {
	delete(s.nodes, ni.Name())
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].Name() >= ni.Name() })
	s.sorted = append(s.sorted[:i], s.sorted[i+1:]...)
	for k, v := range ni.Node.Labels {
		set := s.domains[k][v]
		delete(set, ni)
		if len(set) == 0 {
			delete(s.domains[k], v)
			if len(s.domains[k]) == 0 {
				delete(s.domains, k)
			}
		}
	}
	s.changed(change{kind: changeRemoveNode, node: ni})
	s.nodesGeneration = s.generation
}

func (s *Snapshot) bindPod(pi *PodInfo, ni *NodeInfo, at, antiAt int) {
	s.pods[keyOf(pi.Pod)] = pi
	s.podNode[pi] = ni
	ni.addPod(pi, at, antiAt)
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		s.antiNodes[ni] = struct{}{}
	}
	if s.byLabel != nil {
		for k, v := range pi.Pod.Labels {
			addToSet(s.byLabel, labelPair{k, v}, pi)
		}
	}
	s.changed(change{kind: changeAddPod, pod: pi, node: ni})
}

func (s *Snapshot) unbindPod(pi *PodInfo) {
	ni := s.podNode[pi]
	delete(s.pods, keyOf(pi.Pod))
	delete(s.podNode, pi)
	at, antiAt := ni.removePod(pi)
	if len(ni.PodsWithRequiredAntiAffinity) == 0 {
		delete(s.antiNodes, ni)
	}
	if s.byLabel != nil {
		for k, v := range pi.Pod.Labels {
			removeFromSet(s.byLabel, labelPair{k, v}, pi)
		}
	}
	s.changed(change{kind: changeRemovePod, pod: pi, node: ni, at: at, antiAt: antiAt})
}

func addToSet[K comparable](m map[K]map[*PodInfo]struct{}, k K, pi *PodInfo) {
	set := m[k]
	if set == nil {
		set = map[*PodInfo]struct{}{}
		m[k] = set
	}
	set[pi] = struct{}{}
}

func removeFromSet[K comparable](m map[K]map[*PodInfo]struct{}, k K, pi *PodInfo) {
	set := m[k]
	delete(set, pi)
	if len(set) == 0 {
		delete(m, k)
	}
}
