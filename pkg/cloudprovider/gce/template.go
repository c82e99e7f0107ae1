package gce

import (
	"context"
	"fmt"
	"maps"
	"path"
	"strings"

	compute "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// GKE's node labels the templates carry when kube-env does not.
const (
	LabelGKENodePool    = "cloud.google.com/gke-nodepool"
	LabelGKESpot        = "cloud.google.com/gke-spot"
	LabelGKEPreemptible = "cloud.google.com/gke-preemptible"
)

// nodeShape is what an instance template says about its nodes; it does
// not depend on the group, so it is cached by template URL (instance
// templates are immutable).
type nodeShape struct {
	MachineType string
	Capacity    v1.ResourceList
	Reserved    v1.ResourceList
	Labels      map[string]string
	Taints      []v1.Taint
	// Spot is true for SPOT and preemptible scheduling.
	Spot bool
	// Price is the hourly price of one node (0 when unknown).
	Price float64
	// Devices are the DRA devices the nodes publish (NVIDIA GPUs under the
	// DRA driver).
	Devices []dra.DeviceSet
}

// machineTypeSource resolves a machine type the table does not know.
type machineTypeSource func(ctx context.Context, zone, name string) (MachineType, error)

// shapeFromTemplate reads machine type, accelerators, scheduling, boot
// disk and kube-env. zone is where an unknown machine type is looked up.
func shapeFromTemplate(ctx context.Context, tmpl *compute.InstanceTemplate, zone string, prices PriceOverrides, lookup machineTypeSource) (nodeShape, error) {
	p := tmpl.Properties
	if p == nil || p.MachineType == "" {
		return nodeShape{}, fmt.Errorf("instance template %s: no machine type", tmpl.Name)
	}
	// The template holds a bare name; tolerate a URL as well.
	name := path.Base(p.MachineType)
	mt, ok := lookupMachineType(name)
	if !ok {
		var err error
		if mt, err = lookup(ctx, zone, name); err != nil {
			return nodeShape{}, fmt.Errorf("instance template %s: machine type %s: %w", tmpl.Name, name, err)
		}
	}
	s := nodeShape{MachineType: name, Labels: map[string]string{}, Reserved: v1.ResourceList{}}
	s.Capacity = v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(mt.VCPUs, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mt.MemoryMiB<<20, resource.BinarySI),
	}
	if gb := bootDiskGB(p); gb > 0 {
		s.Capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(gb<<30, resource.BinarySI)
	}
	gpus, gpuType := mt.GPUs, mt.GPUType
	var accPrice Price
	var attached int64
	for _, acc := range p.GuestAccelerators {
		typ := path.Base(acc.AcceleratorType)
		if acc.AcceleratorCount < 0 || typ == "" || typ == "." {
			return nodeShape{}, fmt.Errorf("instance template %s: guest accelerator %q count %d is not valid", tmpl.Name, acc.AcceleratorType, acc.AcceleratorCount)
		}
		if gpuType != "" && typ != gpuType {
			return nodeShape{}, fmt.Errorf("instance template %s: guest accelerator %s on machine type %s, which comes with %s", tmpl.Name, typ, name, gpuType)
		}
		gpuType = typ
		attached += acc.AcceleratorCount
		pr := priceOf(acceleratorPrices, prices.Accelerators, typ)
		accPrice.OnDemand += float64(acc.AcceleratorCount) * pr.OnDemand
		accPrice.Spot += float64(acc.AcceleratorCount) * pr.Spot
	}
	// Bundled GPUs (a2, a3, g2) may be listed in the template too: count
	// them once.
	gpus = max(gpus, attached)
	if sch := p.Scheduling; sch != nil {
		switch {
		case sch.ProvisioningModel == "SPOT":
			s.Spot = true
			s.Labels[LabelGKESpot] = "true"
		case sch.Preemptible:
			s.Spot = true
			s.Labels[LabelGKEPreemptible] = "true"
		}
	}
	if env := metadataValue(p.Metadata, "kube-env"); env != "" {
		ke, err := parseKubeEnv(env)
		if err != nil {
			return nodeShape{}, fmt.Errorf("instance template %s: %w", tmpl.Name, err)
		}
		maps.Copy(s.Labels, ke.Labels) // what GKE wrote wins
		s.Taints = ke.Taints
		s.Reserved = ke.Reserved
	}
	if err := s.addAccelerators(gpus, gpuType); err != nil {
		return nodeShape{}, fmt.Errorf("instance template %s: %w", tmpl.Name, err)
	}
	machine := priceOf(machinePrices, prices.MachineTypes, name)
	if base := machine.For(s.Spot); base > 0 {
		s.Price = base + accPrice.For(s.Spot)
	}
	return s, nil
}

// addAccelerators gives the shape its accelerators once its labels are
// known: TPU chips (machine types ct*-) as google.com/tpu; NVIDIA GPUs as
// the device plugin advertises them under GKE's partition and sharing
// labels, or, on node pools that run the NVIDIA DRA driver instead of
// GKE's device plugin (label gke-no-default-nvidia-gpu-device-plugin), as
// the devices of its ResourceSlices.
func (s *nodeShape) addAccelerators(count int64, typ string) error {
	switch {
	case count <= 0:
		return nil
	case strings.HasPrefix(typ, "tpu-"):
		s.Capacity[gpu.ResourceTPU] = *resource.NewQuantity(count, resource.DecimalSI)
		if _, ok := s.Labels[gpu.LabelGKETPUAccelerator]; !ok {
			s.Labels[gpu.LabelGKETPUAccelerator] = typ
		}
		return nil
	case !strings.HasPrefix(typ, "nvidia-"):
		return nil
	}
	s.Labels[gpu.LabelGKEAccelerator] = typ
	model, known := gpu.LookupModel(typ)
	if gpu.UsesDRADriver(s.Labels) {
		if known {
			s.Devices = []dra.DeviceSet{dra.NVIDIAGPUs(model, int(count))}
		} else {
			s.Devices = []dra.DeviceSet{dra.GenericDevices(gpu.DriverNVIDIA, int(count))}
		}
		return nil
	}
	rl, err := gpu.AdvertisedResources(count, s.Labels, model.MemoryGB)
	if err != nil {
		return fmt.Errorf("kube-env %w", err)
	}
	maps.Copy(s.Capacity, rl)
	return nil
}

// slices are the ResourceSlices the group's template node publishes.
func (s nodeShape) slices(node *v1.Node) []*resourceapi.ResourceSlice {
	out, _ := dra.TemplateSlices(node.Name, s.Devices) // counts and names are ours: always valid
	return out
}

// node builds the group's template node: the shape, the zone and region,
// the node-pool label, and allocatable lowered by the kubelet's
// reservation.
func (s nodeShape) node(group, zone, pool string) *v1.Node {
	labels := maps.Clone(s.Labels)
	if pool != "" {
		if _, ok := labels[LabelGKENodePool]; !ok {
			labels[LabelGKENodePool] = pool
		}
	}
	region := zone
	if i := strings.LastIndex(zone, "-"); i > 0 {
		region = zone[:i]
	}
	n := cloudprovider.TemplateNode(cloudprovider.TemplateSpec{
		Group: group, Capacity: s.Capacity, Labels: labels, Taints: s.Taints,
		InstanceType: s.MachineType, Zone: zone, Region: region,
	})
	for name, r := range s.Reserved {
		if q, ok := n.Status.Allocatable[name]; ok {
			q.Sub(r)
			if q.Sign() < 0 {
				q = resource.Quantity{}
			}
			n.Status.Allocatable[name] = q
		}
	}
	return n
}

func bootDiskGB(p *compute.InstanceProperties) int64 {
	for _, d := range p.Disks {
		if d.Boot && d.InitializeParams != nil {
			return d.InitializeParams.DiskSizeGb
		}
	}
	return 0
}

func metadataValue(m *compute.Metadata, key string) string {
	if m == nil {
		return ""
	}
	for _, it := range m.Items {
		if it != nil && it.Key == key && it.Value != nil {
			return *it.Value
		}
	}
	return ""
}

// priceOf prefers the override, then the built-in table.
func priceOf(builtin, override map[string]Price, name string) Price {
	if p, ok := override[name]; ok {
		return p
	}
	return builtin[name]
}

// machinePrices are the machine table's prices by type.
var machinePrices = func() map[string]Price {
	out := make(map[string]Price, len(builtinMachineTypes))
	for name, mt := range builtinMachineTypes {
		out[name] = mt.Price
	}
	return out
}()

// machineTypeFromAPI converts machineTypes.get's answer.
func machineTypeFromAPI(mt *compute.MachineType) MachineType {
	out := MachineType{Name: mt.Name, VCPUs: mt.GuestCpus, MemoryMiB: mt.MemoryMb}
	for _, acc := range mt.Accelerators {
		out.GPUs += acc.GuestAcceleratorCount
		out.GPUType = acc.GuestAcceleratorType
	}
	return out
}
