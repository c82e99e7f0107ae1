package schedulerparity

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// draObjects is the scheduler's view of the DRA objects of one cluster: the
// SharedDRAManager the DynamicResources plugin reads through. kube-scheduler
// fills its own from informers and an assume cache; for one scheduling
// cycle over a fixed cluster a static one answers the same: the same
// claims, slices and classes, and the allocated devices computed from the
// claims as the scheduler's allocatedDevices tracker does (devices
// allocated with admin access are not taken).
type draObjects struct {
	classes map[string]*resourceapi.DeviceClass
	claims  map[types.NamespacedName]*resourceapi.ResourceClaim
	slices  []*resourceapi.ResourceSlice
}

var (
	_ fwk.SharedDRAManager     = (*draObjects)(nil)
	_ fwk.ResourceClaimTracker = claimTracker{}
	_ fwk.ResourceSliceLister  = (*draObjects)(nil)
	_ fwk.DeviceClassLister    = (*draObjects)(nil)
)

func newDRAObjects(c *Cluster) *draObjects {
	d := &draObjects{
		classes: map[string]*resourceapi.DeviceClass{},
		claims:  map[types.NamespacedName]*resourceapi.ResourceClaim{},
		slices:  c.ResourceSlices,
	}
	for _, dc := range c.DeviceClasses {
		d.classes[dc.Name] = dc
	}
	for _, rc := range c.ResourceClaims {
		d.claims[types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name}] = rc
	}
	return d
}

func (d *draObjects) ResourceClaims() fwk.ResourceClaimTracker     { return claimTracker{d} }
func (d *draObjects) ResourceSlices() fwk.ResourceSliceLister      { return d }
func (d *draObjects) DeviceClasses() fwk.DeviceClassLister         { return d }
func (d *draObjects) DeviceClassResolver() fwk.DeviceClassResolver { return noExtendedResources{} }
func (d *draObjects) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return d.slices, nil
}

func (d *draObjects) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(d.classes))
	for _, c := range d.classes {
		out = append(out, c)
	}
	return out, nil
}

func (d *draObjects) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := d.classes[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// claimTracker is the ResourceClaimTracker over the same claims (the
// class lister's List takes the name on draObjects).
type claimTracker struct{ d *draObjects }

func (t claimTracker) List() ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, len(t.d.claims))
	for _, c := range t.d.claims {
		out = append(out, c)
	}
	return out, nil
}

func (t claimTracker) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	if c, ok := t.d.claims[types.NamespacedName{Namespace: namespace, Name: name}]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
}

func (t claimTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	out := sets.New[structured.DeviceID]()
	for _, c := range t.d.claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			out.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
		}
	}
	return out, nil
}

func (t claimTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	devices, _ := t.ListAllAllocatedDevices()
	return &structured.AllocatedState{AllocatedDevices: devices, AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}, nil
}

// Nothing is ever in flight: the oracle runs PreFilter and Filter only.
func (claimTracker) SignalClaimPendingAllocation(types.UID, *resourceapi.ResourceClaim) error {
	return nil
}
func (claimTracker) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }
func (claimTracker) MaybeRemoveClaimPendingAllocation(types.UID, bool) bool       { return false }
func (claimTracker) AssumeClaimAfterAPICall(*resourceapi.ResourceClaim) error     { return nil }
func (claimTracker) AssumedClaimRestore(string, string)                           {}

// noExtendedResources: DRAExtendedResource is off, as gpuscale models it
// (on by default from 1.37; docs/predicates.md says what that changes).
type noExtendedResources struct{}

func (noExtendedResources) GetDeviceClass(v1.ResourceName) *resourceapi.DeviceClass { return nil }
