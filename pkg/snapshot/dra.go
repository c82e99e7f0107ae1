package snapshot

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// DRAFeatures are the Dynamic Resource Allocation features of the cluster's
// kube-scheduler, as its feature gates set them. They decide which claims
// and devices allocation accepts.
type DRAFeatures struct {
	// AdminAccess (DRAAdminAccess, beta and on by default in 1.35).
	AdminAccess bool
	// PrioritizedList lets requests list alternatives (firstAvailable;
	// DRAPrioritizedList, beta and on by default in 1.35).
	PrioritizedList bool
	// PartitionableDevices lets devices consume shared counters, how MIG
	// partitions are published (DRAPartitionableDevices, alpha and off by
	// default in 1.35).
	PartitionableDevices bool
	// DeviceTaints (DRADeviceTaints, alpha and off by default in 1.35).
	DeviceTaints bool
}

// DefaultDRAFeatures are kube-scheduler v1.35's defaults.
func DefaultDRAFeatures() DRAFeatures {
	return DRAFeatures{AdminAccess: true, PrioritizedList: true}
}

// Allocator is the features as the structured allocator takes them.
func (f DRAFeatures) Allocator() structured.Features {
	return structured.Features{
		AdminAccess:          f.AdminAccess,
		PrioritizedList:      f.PrioritizedList,
		PartitionableDevices: f.PartitionableDevices,
		DeviceTaints:         f.DeviceTaints,
	}
}

// draStore holds the resource.k8s.io objects. Its maps are made on first
// use, so a snapshot without DRA objects pays nothing.
type draStore struct {
	features  DRAFeatures
	classes   map[string]*resourceapi.DeviceClass
	templates map[claimKey]*resourceapi.ResourceClaimTemplate
	claims    map[claimKey]*resourceapi.ResourceClaim
	slices    map[string]*sliceEntry
	// byNode lists the slices published for one node (spec.nodeName),
	// shared the others (node selector, all nodes, per-device selection);
	// both sorted by slice name.
	byNode map[string][]*sliceEntry
	shared []*sliceEntry
	// allocated counts the claims each device is allocated to (admin
	// access allocations, which do not take a device, excluded).
	allocated map[structured.DeviceID]int32
}

// claimKey is a namespaced name.
type claimKey struct{ namespace, name string }

// sliceEntry is a ResourceSlice with the ids of its devices made once.
type sliceEntry struct {
	slice *resourceapi.ResourceSlice
	ids   []structured.DeviceID
}

func (d *draStore) init() {
	if d.slices != nil {
		return
	}
	d.classes = map[string]*resourceapi.DeviceClass{}
	d.templates = map[claimKey]*resourceapi.ResourceClaimTemplate{}
	d.claims = map[claimKey]*resourceapi.ResourceClaim{}
	d.slices = map[string]*sliceEntry{}
	d.byNode = map[string][]*sliceEntry{}
	d.allocated = map[structured.DeviceID]int32{}
}

// SetDRAFeatures sets the scheduler's DRA features (DefaultDRAFeatures
// until set).
func (s *Snapshot) SetDRAFeatures(f DRAFeatures) {
	old := s.dra.features
	s.dra.features = f
	s.changed(change{kind: changeObject, restore: func() { s.dra.features = old }})
}

// DRAFeatures are the scheduler's DRA features.
func (s *Snapshot) DRAFeatures() DRAFeatures { return s.dra.features }

// HasDRA reports whether the snapshot holds any ResourceSlice or
// ResourceClaim: without them no pod can get a device.
func (s *Snapshot) HasDRA() bool { return len(s.dra.slices) > 0 || len(s.dra.claims) > 0 }

// SetDeviceClass adds or replaces a DeviceClass.
func (s *Snapshot) SetDeviceClass(c *resourceapi.DeviceClass) error {
	if c == nil || c.Name == "" {
		return fmt.Errorf("device class: metadata.name: must not be empty")
	}
	if err := validateSelectors(c.Spec.Selectors, "spec.selectors"); err != nil {
		return fmt.Errorf("device class %s: %w", c.Name, err)
	}
	s.dra.init()
	setObject(s, s.dra.classes, c.Name, c)
	return nil
}

// RemoveDeviceClass removes a DeviceClass by name; a name not in the
// snapshot is no error.
func (s *Snapshot) RemoveDeviceClass(name string) { deleteObject(s, s.dra.classes, name) }

// DeviceClass returns a DeviceClass by name, or nil.
func (s *Snapshot) DeviceClass(name string) *resourceapi.DeviceClass { return s.dra.classes[name] }

// DeviceClasses returns every DeviceClass sorted by name.
func (s *Snapshot) DeviceClasses() []*resourceapi.DeviceClass {
	out := make([]*resourceapi.DeviceClass, 0, len(s.dra.classes))
	for _, c := range s.dra.classes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetResourceClaimTemplate adds or replaces a ResourceClaimTemplate.
func (s *Snapshot) SetResourceClaimTemplate(t *resourceapi.ResourceClaimTemplate) error {
	if t == nil || t.Name == "" {
		return fmt.Errorf("resource claim template: metadata.name: must not be empty")
	}
	if err := validateClaimSpec(&t.Spec.Spec, "spec.spec"); err != nil {
		return fmt.Errorf("resource claim template %s/%s: %w", t.Namespace, t.Name, err)
	}
	s.dra.init()
	k := claimKey{t.Namespace, t.Name}
	old, had := s.dra.templates[k]
	s.dra.templates[k] = t
	s.changed(change{kind: changeObject, restore: func() {
		if had {
			s.dra.templates[k] = old
		} else {
			delete(s.dra.templates, k)
		}
	}})
	return nil
}

// ResourceClaimTemplates returns every template sorted by namespace and
// name.
func (s *Snapshot) ResourceClaimTemplates() []*resourceapi.ResourceClaimTemplate {
	out := make([]*resourceapi.ResourceClaimTemplate, 0, len(s.dra.templates))
	for _, t := range s.dra.templates {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// RemoveResourceClaimTemplate removes a template; one not in the snapshot is
// no error.
func (s *Snapshot) RemoveResourceClaimTemplate(namespace, name string) {
	k := claimKey{namespace, name}
	old, had := s.dra.templates[k]
	if !had {
		return
	}
	delete(s.dra.templates, k)
	s.changed(change{kind: changeObject, restore: func() { s.dra.templates[k] = old }})
}

// ResourceClaimTemplate returns a template by namespace and name, or nil.
func (s *Snapshot) ResourceClaimTemplate(namespace, name string) *resourceapi.ResourceClaimTemplate {
	return s.dra.templates[claimKey{namespace, name}]
}

// SetResourceClaim adds or replaces a ResourceClaim, with its allocation
// and reservations as the API server has them.
func (s *Snapshot) SetResourceClaim(c *resourceapi.ResourceClaim) error {
	if c == nil || c.Name == "" {
		return fmt.Errorf("resource claim: metadata.name: must not be empty")
	}
	if err := validateClaim(c); err != nil {
		return fmt.Errorf("resource claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	s.dra.init()
	s.putClaim(claimKey{c.Namespace, c.Name}, c)
	return nil
}

// RemoveResourceClaim removes a claim, freeing its devices.
func (s *Snapshot) RemoveResourceClaim(namespace, name string) error {
	k := claimKey{namespace, name}
	if s.dra.claims[k] == nil {
		return fmt.Errorf("resource claim %s/%s: not in the snapshot", namespace, name)
	}
	s.putClaim(k, nil)
	return nil
}

// ResourceClaim returns a claim by namespace and name, or nil. Claims the
// snapshot made for pods placed in a simulation (from a template, for a pod
// that had none yet) are found under SimulatedClaimName.
func (s *Snapshot) ResourceClaim(namespace, name string) *resourceapi.ResourceClaim {
	return s.dra.claims[claimKey{namespace, name}]
}

// ResourceClaims returns every claim sorted by namespace and name.
func (s *Snapshot) ResourceClaims() []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, 0, len(s.dra.claims))
	for _, c := range s.dra.claims {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// putClaim stores c under k (nil deletes), keeps the allocated-device
// counts right, and records how to put back what was there.
func (s *Snapshot) putClaim(k claimKey, c *resourceapi.ResourceClaim) {
	old := s.dra.claims[k]
	s.storeClaim(k, old, c)
	s.changed(change{kind: changeObject, restore: func() { s.storeClaim(k, c, old) }})
}

func (s *Snapshot) storeClaim(k claimKey, old, c *resourceapi.ResourceClaim) {
	s.countDevices(old, -1)
	if c == nil {
		delete(s.dra.claims, k)
	} else {
		s.dra.claims[k] = c
	}
	s.countDevices(c, 1)
}

func (s *Snapshot) countDevices(c *resourceapi.ResourceClaim, sign int32) {
	if c == nil || c.Status.Allocation == nil {
		return
	}
	for i := range c.Status.Allocation.Devices.Results {
		r := &c.Status.Allocation.Devices.Results[i]
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if n := s.dra.allocated[id] + sign; n > 0 {
			s.dra.allocated[id] = n
		} else {
			delete(s.dra.allocated, id)
		}
	}
}

// DeviceAllocated reports whether some claim holds the device.
func (s *Snapshot) DeviceAllocated(id structured.DeviceID) bool { return s.dra.allocated[id] > 0 }

// AllocatedDeviceCount is how many devices claims hold.
func (s *Snapshot) AllocatedDeviceCount() int { return len(s.dra.allocated) }
