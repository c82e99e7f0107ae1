package snapshot

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// UpdateNode replaces a node's object (and group) and keeps its pods: a
// node that became Ready, advertised its GPUs or got a taint.
func (s *Snapshot) UpdateNode(node *v1.Node, group string) error {
	old, ok := s.nodes[node.Name]
	if !ok {
		return fmt.Errorf("node %s: not in the snapshot", node.Name)
	}
	if err := validateNode(node); err != nil {
		return fmt.Errorf("node %s: %w", node.Name, err)
	}
	if group != "" && s.groups[group] == nil {
		return fmt.Errorf("node %s: node group %q is not in the snapshot", node.Name, group)
	}
	pods := append([]*PodInfo(nil), old.Pods...)
	for len(old.Pods) > 0 {
		s.unbindPod(old.Pods[len(old.Pods)-1])
	}
	s.deleteNode(old)
	ni := newNodeInfo(node, group)
	s.insertNode(ni)
	for _, pi := range pods {
		s.bindPod(pi, ni, -1, -1)
	}
	return nil
}

// RemoveNodeGroup removes a group; its nodes must be gone or moved first.
func (s *Snapshot) RemoveNodeGroup(id string) { deleteObject(s, s.groups, id) }

// RemoveNamespace, RemovePersistentVolume, RemovePersistentVolumeClaim and
// RemoveStorageClass forget an object; unknown ones need nothing.
func (s *Snapshot) RemoveNamespace(name string)        { deleteObject(s, s.namespaces, name) }
func (s *Snapshot) RemovePersistentVolume(name string) { deleteObject(s, s.pvs, name) }
func (s *Snapshot) RemovePersistentVolumeClaim(namespace, name string) {
	deleteObject(s, s.pvcs, namespace+"/"+name)
}
func (s *Snapshot) RemoveStorageClass(name string) { deleteObject(s, s.classes, name) }

// Object names, for callers keeping the snapshot in step with a source.
func (s *Snapshot) PersistentVolumes() []*v1.PersistentVolume { return valuesByKey(s.pvs) }
func (s *Snapshot) PersistentVolumeClaims() []*v1.PersistentVolumeClaim {
	return valuesByKey(s.pvcs)
}
func (s *Snapshot) StorageClasses() []*storagev1.StorageClass { return valuesByKey(s.classes) }

// deleteObject removes k and records how to put it back.
func deleteObject[V any](s *Snapshot, m map[string]*V, k string) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	s.changed(change{kind: changeObject, restore: func() { m[k] = old }})
}
