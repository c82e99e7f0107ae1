package kwok

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// devices reads one entry of template.devices: a run of alike DRA devices.
//
//	devices:
//	- driver: gpu.nvidia.com
//	  count: 8
//	  gpuModel: nvidia-h100-80gb     # the NVIDIA DRA driver's attributes for this model
//	- driver: nic.example.com
//	  count: 2
//	  namePrefix: nic-
//	  attributes: {speed: 100, rdma: true, fw: {version: "1.2.3"}}
//	  capacity: {bandwidth: 100G}
func (d *decoder) devices(path string, raw json.RawMessage) dra.DeviceSet {
	var f fileDevices
	if !d.object(path, raw, &f) {
		return dra.DeviceSet{}
	}
	ds := dra.DeviceSet{Driver: d.str(path+".driver", f.Driver), NamePrefix: "device-"}
	if absent(f.Count) {
		d.add(path+".count", "required")
	} else {
		ds.Count = d.integer(path+".count", f.Count)
	}
	if model := d.str(path+".gpuModel", f.GPUModel); model != "" {
		m, ok := gpu.LookupModel(model)
		if !ok {
			d.add(path+".gpuModel", "unknown GPU model %q (known: accelerator labels such as nvidia-h100-80gb, nvidia-a100-80gb, nvidia-l4)", model)
		} else {
			if ds.Driver != "" && ds.Driver != gpu.DriverNVIDIA {
				d.add(path+".gpuModel", "describes devices of %s, not of %s", gpu.DriverNVIDIA, ds.Driver)
			}
			nv := dra.NVIDIAGPUs(m, ds.Count)
			ds.NamePrefix, ds.Attributes, ds.Capacity = nv.NamePrefix, nv.Attributes, nv.Capacity
		}
	}
	if !absent(f.NamePrefix) {
		ds.NamePrefix = d.str(path+".namePrefix", f.NamePrefix)
	}
	if k := kind(f.Attributes); k != "" && k != "null" {
		var attrs map[string]json.RawMessage
		if d.object(path+".attributes", f.Attributes, &attrs) {
			ds.Attributes = maps.Clone(ds.Attributes)
			if ds.Attributes == nil {
				ds.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
			}
			for _, name := range slices.Sorted(maps.Keys(attrs)) {
				if a, ok := d.attribute(fmt.Sprintf("%s.attributes[%q]", path, name), attrs[name]); ok {
					ds.Attributes[resourceapi.QualifiedName(name)] = a
				}
			}
		}
	}
	if k := kind(f.Capacity); k != "" && k != "null" {
		var capacity map[string]*scalar
		if d.object(path+".capacity", f.Capacity, &capacity) {
			ds.Capacity = maps.Clone(ds.Capacity)
			if ds.Capacity == nil {
				ds.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
			}
			for _, name := range slices.Sorted(maps.Keys(capacity)) {
				if q, ok := d.quantity(fmt.Sprintf("%s.capacity[%q]", path, name), capacity[name]); ok {
					ds.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: q}
				}
			}
		}
	}
	return ds
}

// attribute reads a device attribute: a string, a whole number, true or
// false, or {version: "1.2.3"} for a semantic version.
func (d *decoder) attribute(path string, raw json.RawMessage) (resourceapi.DeviceAttribute, bool) {
	var a resourceapi.DeviceAttribute
	switch kind(raw) {
	case "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		a.StringValue = &s
	case "bool":
		b := string(raw) == "true"
		a.BoolValue = &b
	case "number":
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			d.add(path, "want a whole number, got %s", raw)
			return a, false
		}
		a.IntValue = &n
	case "map":
		var v struct {
			Version *scalar `json:"version"`
		}
		if !d.object(path, raw, &v) {
			return a, false
		}
		s := d.str(path+".version", v.Version)
		if s == "" {
			d.add(path+".version", "required")
			return a, false
		}
		a.VersionValue = &s
	default:
		d.add(path, "want a string, a whole number, true or false, or {version: ...}, got %s", raw)
		return a, false
	}
	return a, true
}
