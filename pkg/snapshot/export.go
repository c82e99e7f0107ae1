package snapshot

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Objects are a snapshot's contents as plain objects, to record a loop's
// input and build the same snapshot again (FromObjects).
type Objects struct {
	Groups         []NodeGroup                 `json:"groups,omitempty"`
	Nodes          []GroupedNode               `json:"nodes,omitempty"`
	Pods           []*v1.Pod                   `json:"pods,omitempty"`
	Namespaces     []*v1.Namespace             `json:"namespaces,omitempty"`
	Volumes        []*v1.PersistentVolume      `json:"volumes,omitempty"`
	Claims         []*v1.PersistentVolumeClaim `json:"claims,omitempty"`
	StorageClasses []*storagev1.StorageClass   `json:"storageClasses,omitempty"`
	CSINodes       []*storagev1.CSINode        `json:"csiNodes,omitempty"`
	// The resource.k8s.io objects, claims with their allocations.
	DeviceClasses          []*resourceapi.DeviceClass           `json:"deviceClasses,omitempty"`
	ResourceClaimTemplates []*resourceapi.ResourceClaimTemplate `json:"resourceClaimTemplates,omitempty"`
	ResourceClaims         []*resourceapi.ResourceClaim         `json:"resourceClaims,omitempty"`
	ResourceSlices         []*resourceapi.ResourceSlice         `json:"resourceSlices,omitempty"`
}

// GroupedNode is a node and its group ("" for none).
type GroupedNode struct {
	Node  *v1.Node `json:"node"`
	Group string   `json:"group,omitempty"`
}

// Export lists the snapshot's objects in a fixed order: groups by id,
// nodes by name, pods in node order and each node's order.
func (s *Snapshot) Export() Objects {
	var o Objects
	for _, g := range s.NodeGroups() {
		o.Groups = append(o.Groups, *g)
	}
	for _, ni := range s.sorted {
		o.Nodes = append(o.Nodes, GroupedNode{Node: ni.Node, Group: ni.Group})
		for _, pi := range ni.Pods {
			o.Pods = append(o.Pods, pi.Pod)
		}
	}
	o.Namespaces = s.Namespaces()
	o.Volumes = valuesByKey(s.pvs)
	o.Claims = valuesByKey(s.pvcs)
	o.StorageClasses = valuesByKey(s.classes)
	o.CSINodes = valuesByKey(s.csiNodes)
	if s.dra.slices != nil {
		o.DeviceClasses, o.ResourceClaimTemplates = s.DeviceClasses(), s.ResourceClaimTemplates()
		o.ResourceClaims, o.ResourceSlices = s.ResourceClaims(), s.ResourceSlices()
	}
	return o
}

func valuesByKey[V any](m map[string]*V) []*V {
	out := make([]*V, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// FromObjects builds a snapshot from exported objects; a bad object is an
// error naming it. ResourceClaims are set after the pods, so that they
// hold the allocations and reservations exported, whatever binding the
// pods reserved.
func FromObjects(o Objects) (*Snapshot, error) {
	s := New()
	for _, g := range o.Groups {
		if err := s.SetNodeGroup(g); err != nil {
			return nil, err
		}
	}
	for _, n := range o.Nodes {
		if err := s.AddNodeInGroup(n.Node, n.Group); err != nil {
			return nil, err
		}
	}
	if err := setDRAObjects(s, o); err != nil {
		return nil, err
	}
	for _, p := range o.Pods {
		if err := s.AddPod(p); err != nil {
			return nil, err
		}
	}
	for _, c := range o.ResourceClaims {
		if err := s.SetResourceClaim(c); err != nil {
			return nil, err
		}
	}
	for _, ns := range o.Namespaces {
		if err := s.SetNamespace(ns); err != nil {
			return nil, err
		}
	}
	for _, pv := range o.Volumes {
		if err := s.SetPersistentVolume(pv); err != nil {
			return nil, err
		}
	}
	for _, pvc := range o.Claims {
		if err := s.SetPersistentVolumeClaim(pvc); err != nil {
			return nil, err
		}
	}
	for _, sc := range o.StorageClasses {
		if err := s.SetStorageClass(sc); err != nil {
			return nil, err
		}
	}
	for _, cn := range o.CSINodes {
		if err := s.SetCSINode(cn); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func setDRAObjects(s *Snapshot, o Objects) error {
	for _, c := range o.DeviceClasses {
		if err := s.SetDeviceClass(c); err != nil {
			return err
		}
	}
	for _, t := range o.ResourceClaimTemplates {
		if err := s.SetResourceClaimTemplate(t); err != nil {
			return err
		}
	}
	for _, sl := range o.ResourceSlices {
		if err := s.SetResourceSlice(sl); err != nil {
			return err
		}
	}
	return nil
}
