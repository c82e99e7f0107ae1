package snapshot

import (
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
)

// SetCSINode adds or replaces a node's CSINode: the CSI drivers registered
// on the node and how many volumes of each it can attach (NodeVolumeLimits).
// A CSINode is named after its node; it may come before the node does.
func (s *Snapshot) SetCSINode(cn *storagev1.CSINode) error {
	if err := validateCSINode(cn); err != nil {
		return err
	}
	setObject(s, s.csiNodes, cn.Name, cn)
	return nil
}

func validateCSINode(cn *storagev1.CSINode) error {
	if cn == nil || cn.Name == "" {
		return fmt.Errorf("csi node: metadata.name: must not be empty")
	}
	seen := make(map[string]bool, len(cn.Spec.Drivers))
	for i, d := range cn.Spec.Drivers {
		switch {
		case d.Name == "":
			return fmt.Errorf("csi node %s: spec.drivers[%d].name: must not be empty", cn.Name, i)
		case seen[d.Name]:
			return fmt.Errorf("csi node %s: spec.drivers[%d].name: driver %q is listed twice", cn.Name, i, d.Name)
		case d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count < 0:
			return fmt.Errorf("csi node %s: spec.drivers[%d].allocatable.count: must not be negative, got %d", cn.Name, i, *d.Allocatable.Count)
		}
		seen[d.Name] = true
	}
	return nil
}

// CSINode returns the CSINode of a node by the node's name, or nil.
func (s *Snapshot) CSINode(name string) *storagev1.CSINode { return s.csiNodes[name] }

// RemoveCSINode forgets a node's CSINode; an unknown one needs nothing.
func (s *Snapshot) RemoveCSINode(name string) { deleteObject(s, s.csiNodes, name) }

// CSINodes returns every CSINode sorted by name.
func (s *Snapshot) CSINodes() []*storagev1.CSINode { return valuesByKey(s.csiNodes) }

// GroupCSINode is the CSINode of the first node of group (by name) that has
// one, or nil: what a node the group adds will most likely register, since
// its nodes share an instance type. The node named except is skipped.
func (s *Snapshot) GroupCSINode(group, except string) *storagev1.CSINode {
	if len(s.csiNodes) == 0 || group == "" {
		return nil
	}
	for _, ni := range s.sorted {
		if ni.Group != group || ni.Node.Name == except {
			continue
		}
		if cn := s.csiNodes[ni.Node.Name]; cn != nil {
			return cn
		}
	}
	return nil
}
