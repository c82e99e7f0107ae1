package dra

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// DeviceSet is a run of alike devices one DRA driver publishes on every
// node of a group: what a provider's configuration declares for scale from
// zero with DRA.
type DeviceSet struct {
	// Driver is the DRA driver, e.g. gpu.nvidia.com.
	Driver string
	// Count devices are published, named NamePrefix0, NamePrefix1, ...
	Count      int
	NamePrefix string
	// Attributes and Capacity are every device's.
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
}

// maxDevicesPerSlice is the API's limit on one ResourceSlice.
const maxDevicesPerSlice = resourceapi.ResourceSliceMaxDevices

// Validate names the first field that the API server would refuse; path
// prefixes the field names ("nodeGroups[0].template.devices[1]").
func (ds *DeviceSet) Validate(path string) error {
	if msgs := validation.IsDNS1123Subdomain(ds.Driver); len(msgs) > 0 {
		return fmt.Errorf("%s.driver: %q is not a DNS subdomain: %s", path, ds.Driver, strings.Join(msgs, ", "))
	}
	if ds.Count < 1 || ds.Count > maxDevicesPerSlice {
		return fmt.Errorf("%s.count: want 1 to %d, got %d", path, maxDevicesPerSlice, ds.Count)
	}
	if msgs := validation.IsDNS1123Label(ds.NamePrefix + strconv.Itoa(ds.Count-1)); len(msgs) > 0 {
		return fmt.Errorf("%s.namePrefix: %q does not make DNS labels: %s", path, ds.NamePrefix, strings.Join(msgs, ", "))
	}
	for name, a := range ds.Attributes {
		set := 0
		for _, v := range []bool{a.StringValue != nil, a.IntValue != nil, a.BoolValue != nil, a.VersionValue != nil} {
			if v {
				set++
			}
		}
		if set != 1 {
			return fmt.Errorf("%s.attributes[%q]: want exactly one of string, int, bool and version", path, name)
		}
	}
	return nil
}

// TemplateSlices makes the ResourceSlices a group's template node
// publishes: one per driver, in a pool named after the node, with the
// sets' devices in order. Device names must not repeat within a driver.
func TemplateSlices(templateNode string, sets []DeviceSet) ([]*resourceapi.ResourceSlice, error) {
	var out []*resourceapi.ResourceSlice
	byDriver := map[string]*resourceapi.ResourceSlice{}
	seen := map[string]bool{}
	for i := range sets {
		ds := &sets[i]
		if err := ds.Validate(fmt.Sprintf("devices[%d]", i)); err != nil {
			return nil, err
		}
		sl := byDriver[ds.Driver]
		if sl == nil {
			node := templateNode
			sl = &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: templateNode + "-" + ds.Driver},
				Spec: resourceapi.ResourceSliceSpec{Driver: ds.Driver, NodeName: &node,
					Pool: resourceapi.ResourcePool{Name: templateNode, ResourceSliceCount: 1}},
			}
			byDriver[ds.Driver] = sl
			out = append(out, sl)
		}
		for j := 0; j < ds.Count; j++ {
			name := ds.NamePrefix + strconv.Itoa(j)
			if seen[ds.Driver+"/"+name] {
				return nil, fmt.Errorf("devices[%d]: device %s of driver %s is declared twice", i, name, ds.Driver)
			}
			seen[ds.Driver+"/"+name] = true
			sl.Spec.Devices = append(sl.Spec.Devices, resourceapi.Device{Name: name, Attributes: ds.Attributes, Capacity: ds.Capacity})
		}
		if len(sl.Spec.Devices) > maxDevicesPerSlice {
			return nil, fmt.Errorf("devices[%d]: driver %s has %d devices, over the %d one slice holds", i, ds.Driver, len(sl.Spec.Devices), maxDevicesPerSlice)
		}
	}
	return out, nil
}

// NVIDIAGPUs is how the NVIDIA DRA driver (gpu.nvidia.com) publishes count
// whole GPUs of model m: devices gpu-0, gpu-1, ... with the attributes it
// sets from NVML (type "gpu", productName, brand, architecture,
// cudaComputeCapability) and their memory as capacity. Per-device
// attributes a template cannot know (uuid, pcieBusID, driver versions)
// are left out: a selector on them matches no template device.
func NVIDIAGPUs(m gpu.Model, count int) DeviceSet {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	cc := m.ComputeCapability
	if strings.Count(cc, ".") == 1 {
		cc += ".0" // published as a semantic version
	}
	return DeviceSet{
		Driver: gpu.DriverNVIDIA, Count: count, NamePrefix: "gpu-",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str("gpu"), "productName": str(m.ProductName), "brand": str("Nvidia"),
			"architecture": str(m.Architecture), "cudaComputeCapability": {VersionValue: &cc},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(m.MemoryMiB<<20, resource.BinarySI)},
		},
	}
}

// GenericDevices are count devices of a driver with no attributes, named
// gpu-0, gpu-1, ...: a template's stand-in when the model is unknown.
func GenericDevices(driver string, count int) DeviceSet {
	return DeviceSet{Driver: driver, Count: count, NamePrefix: "gpu-"}
}
