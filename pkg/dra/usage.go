package dra

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Usage is how much of a node's accelerator devices (those of accelerator
// drivers, gpu.IsAcceleratorDriver) its claims hold, in whole-device
// equivalents: a whole GPU is 1, a MIG device its profile's share of a
// GPU. Offered counts each whole device once: devices published as
// partitions of one GPU (drawing on one counter set) offer one GPU
// between them.
type Usage struct {
	Used, Offered float64
	// Driver is the first accelerator driver met (slices in name order),
	// "" when none.
	Driver string
}

// Ratio is Used over Offered, 0 when nothing is offered.
func (u Usage) Ratio() float64 {
	if u.Offered <= 0 {
		return 0
	}
	return u.Used / u.Offered
}

// NodeUsage sums the accelerator devices published for the node (its own
// slices; network-attached devices belong to no node) and those of them
// claims hold.
func NodeUsage(s *snapshot.Snapshot, node string) Usage {
	var u Usage
	s.SlicesFor(node).EachLocal(func(sl *resourceapi.ResourceSlice, ids []structured.DeviceID) {
		if !gpu.IsAcceleratorDriver(sl.Spec.Driver) {
			return
		}
		u.add(sl, func(i int) bool { return s.DeviceAllocated(ids[i]) })
	})
	return u
}

// TemplateUsage is what the slices offer, none of it used: a new node.
func TemplateUsage(slices []*resourceapi.ResourceSlice) Usage {
	var u Usage
	for _, sl := range slices {
		if gpu.IsAcceleratorDriver(sl.Spec.Driver) {
			u.add(sl, func(int) bool { return false })
		}
	}
	return u
}

func (u *Usage) add(sl *resourceapi.ResourceSlice, allocated func(int) bool) {
	if u.Driver == "" && len(sl.Spec.Devices) > 0 {
		u.Driver = sl.Spec.Driver
	}
	sets := map[string]bool{}
	for i := range sl.Spec.Devices {
		d := &sl.Spec.Devices[i]
		w := Weight(sl.Spec.Driver, d)
		if len(d.ConsumesCounters) == 0 {
			u.Offered += w
		} else {
			for _, c := range d.ConsumesCounters {
				sets[c.CounterSet] = true
			}
		}
		if allocated(i) {
			u.Used += w
		}
	}
	u.Offered += float64(len(sets))
}

// Weight is a device in whole-device equivalents: a MIG device (attribute
// type "mig" with a profile, as the NVIDIA DRA driver publishes them) is
// its profile's share of a GPU, any other device 1.
func Weight(driver string, d *resourceapi.Device) float64 {
	attr := func(name string) (string, bool) {
		for _, key := range []resourceapi.QualifiedName{resourceapi.QualifiedName(name), resourceapi.QualifiedName(driver + "/" + name)} {
			if a, ok := d.Attributes[key]; ok && a.StringValue != nil {
				return *a.StringValue, true
			}
		}
		return "", false
	}
	if t, _ := attr("type"); t != "mig" {
		return 1
	}
	profile, ok := attr("profile")
	if !ok {
		return 1
	}
	p, err := gpu.ParseMIGProfile(profile)
	if err != nil {
		return 1
	}
	memoryGB := 0
	if name, ok := attr("productName"); ok {
		if m, ok := gpu.LookupModel(name); ok {
			memoryGB = m.MemoryGB
		}
	}
	return p.Fraction(memoryGB)
}
