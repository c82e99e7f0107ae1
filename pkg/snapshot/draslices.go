package snapshot

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// SetResourceSlice adds or replaces a ResourceSlice (by name).
func (s *Snapshot) SetResourceSlice(sl *resourceapi.ResourceSlice) error {
	if sl == nil || sl.Name == "" {
		return fmt.Errorf("resource slice: metadata.name: must not be empty")
	}
	if err := validateSlice(sl); err != nil {
		return fmt.Errorf("resource slice %s: %w", sl.Name, err)
	}
	s.dra.init()
	s.putSlice(sl.Name, newSliceEntry(sl))
	return nil
}

// RemoveResourceSlice removes a slice by name.
func (s *Snapshot) RemoveResourceSlice(name string) error {
	if s.dra.slices[name] == nil {
		return fmt.Errorf("resource slice %s: not in the snapshot", name)
	}
	s.putSlice(name, nil)
	return nil
}

func newSliceEntry(sl *resourceapi.ResourceSlice) *sliceEntry {
	e := &sliceEntry{slice: sl, ids: make([]structured.DeviceID, len(sl.Spec.Devices))}
	for i := range sl.Spec.Devices {
		e.ids[i] = structured.MakeDeviceID(sl.Spec.Driver, sl.Spec.Pool.Name, sl.Spec.Devices[i].Name)
	}
	return e
}

// putSlice stores e under name (nil deletes) with its index entries and
// records how to put back what was there.
func (s *Snapshot) putSlice(name string, e *sliceEntry) {
	old := s.dra.slices[name]
	s.storeSlice(name, old, e)
	s.changed(change{kind: changeObject, restore: func() { s.storeSlice(name, e, old) }})
}

func (s *Snapshot) storeSlice(name string, old, e *sliceEntry) {
	if old != nil {
		s.unindexSlice(old)
	}
	if e == nil {
		delete(s.dra.slices, name)
		return
	}
	s.dra.slices[name] = e
	s.indexSlice(e)
}

func (s *Snapshot) indexSlice(e *sliceEntry) {
	if node := sliceNode(e.slice); node != "" {
		s.dra.byNode[node] = insertSlice(s.dra.byNode[node], e)
		return
	}
	s.dra.shared = insertSlice(s.dra.shared, e)
}

func (s *Snapshot) unindexSlice(e *sliceEntry) {
	if node := sliceNode(e.slice); node != "" {
		list := removeSlice(s.dra.byNode[node], e)
		if len(list) == 0 {
			delete(s.dra.byNode, node)
		} else {
			s.dra.byNode[node] = list
		}
		return
	}
	s.dra.shared = removeSlice(s.dra.shared, e)
}

func sliceNode(sl *resourceapi.ResourceSlice) string {
	if sl.Spec.NodeName != nil {
		return *sl.Spec.NodeName
	}
	return ""
}

// insertSlice returns a new list (indexes are shared with readers, so the
// old one is never changed in place) with e in name order.
func insertSlice(list []*sliceEntry, e *sliceEntry) []*sliceEntry {
	i := sort.Search(len(list), func(i int) bool { return list[i].slice.Name >= e.slice.Name })
	out := make([]*sliceEntry, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, e)
	return append(out, list[i:]...)
}

func removeSlice(list []*sliceEntry, e *sliceEntry) []*sliceEntry {
	out := make([]*sliceEntry, 0, len(list))
	for _, x := range list {
		if x != e {
			out = append(out, x)
		}
	}
	return out
}

// ResourceSlice returns a slice by name, or nil.
func (s *Snapshot) ResourceSlice(name string) *resourceapi.ResourceSlice {
	if e := s.dra.slices[name]; e != nil {
		return e.slice
	}
	return nil
}

// ResourceSlices returns every slice sorted by name.
func (s *Snapshot) ResourceSlices() []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, 0, len(s.dra.slices))
	for _, e := range s.dra.slices {
		out = append(out, e.slice)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NodeSlices are the slices a node published (spec.nodeName) and the
// slices not tied to one node (node selectors, all nodes), in name order.
// Devices of the shared slices may not be reachable from the node: the
// allocator checks.
type NodeSlices struct {
	Local, Shared []*sliceEntry
}

// SlicesFor returns the slices that may offer devices to the node named node.
func (s *Snapshot) SlicesFor(node string) NodeSlices {
	return NodeSlices{Local: s.dra.byNode[node], Shared: s.dra.shared}
}

// Len is the number of slices.
func (ns NodeSlices) Len() int { return len(ns.Local) + len(ns.Shared) }

// Each calls fn for every slice, node-local ones first.
func (ns NodeSlices) Each(fn func(sl *resourceapi.ResourceSlice, ids []structured.DeviceID)) {
	for _, e := range ns.Local {
		fn(e.slice, e.ids)
	}
	for _, e := range ns.Shared {
		fn(e.slice, e.ids)
	}
}

// EachLocal calls fn for the node's own slices only.
func (ns NodeSlices) EachLocal(fn func(sl *resourceapi.ResourceSlice, ids []structured.DeviceID)) {
	for _, e := range ns.Local {
		fn(e.slice, e.ids)
	}
}

// NodeResourceSlices returns the slices published for one node
// (spec.nodeName), in name order.
func (s *Snapshot) NodeResourceSlices(node string) []*resourceapi.ResourceSlice {
	list := s.dra.byNode[node]
	out := make([]*resourceapi.ResourceSlice, len(list))
	for i, e := range list {
		out[i] = e.slice
	}
	return out
}
