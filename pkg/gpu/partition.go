package gpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MIGProfile is a MIG instance profile: "1g.10gb" is one compute slice with
// 10 GB of memory, "+me" adds the media extensions.
type MIGProfile struct {
	// Name is the profile as NVIDIA writes it, e.g. "1g.10gb+me".
	Name string
	// ComputeSlices is the "1g" part.
	ComputeSlices int
	// MemoryGB is the "10gb" part.
	MemoryGB int
}

// ParseMIGProfile reads "1g.10gb", "1g.10gb+me" or "mig-1g.10gb".
func ParseMIGProfile(s string) (MIGProfile, error) {
	name := strings.TrimPrefix(s, "mig-")
	base, _, _ := strings.Cut(name, "+")
	g, mem, ok := strings.Cut(base, ".")
	if !ok || !strings.HasSuffix(g, "g") || !strings.HasSuffix(mem, "gb") {
		return MIGProfile{}, fmt.Errorf("MIG profile %q: want <n>g.<m>gb, e.g. 1g.10gb", s)
	}
	c, err1 := strconv.Atoi(strings.TrimSuffix(g, "g"))
	m, err2 := strconv.Atoi(strings.TrimSuffix(mem, "gb"))
	if err1 != nil || err2 != nil || c <= 0 || c > 7 || m <= 0 {
		return MIGProfile{}, fmt.Errorf("MIG profile %q: want <n>g.<m>gb with 1 <= n <= 7 and m > 0", s)
	}
	return MIGProfile{Name: name, ComputeSlices: c, MemoryGB: m}, nil
}

// MIGProfileOf reads the profile of a nvidia.com/mig-* resource.
func MIGProfileOf(name v1.ResourceName) (MIGProfile, bool) {
	if !strings.HasPrefix(string(name), MIGPrefix) {
		return MIGProfile{}, false
	}
	p, err := ParseMIGProfile(strings.TrimPrefix(string(name), MIGPrefix))
	return p, err == nil
}

// Resource is the profile's resource under the device plugin's mixed
// strategy: nvidia.com/mig-1g.10gb.
func (p MIGProfile) Resource() v1.ResourceName { return v1.ResourceName(MIGPrefix + p.Name) }

// a30Profiles exist only on the A30, whose GPU has 4 compute slices, not 7.
func (p MIGProfile) isA30() bool {
	base, _, _ := strings.Cut(p.Name, "+")
	return base == "1g.6gb" || base == "2g.12gb" || base == "4g.24gb"
}

// gpuComputeSlices is 4 on the A30 (24 GB) and 7 on every other MIG GPU.
func (p MIGProfile) gpuComputeSlices(gpuMemoryGB int) int {
	if gpuMemoryGB == 24 || (gpuMemoryGB == 0 && p.isA30()) {
		return 4
	}
	return 7
}

// Fraction is the share of one GPU's compute the profile takes: 1g of an
// A100 or H100 is 1/7, 1g of an A30 is 1/4. gpuMemoryGB is the GPU's
// memory when known (0 when not).
func (p MIGProfile) Fraction(gpuMemoryGB int) float64 {
	return math.Min(1, float64(p.ComputeSlices)/float64(p.gpuComputeSlices(gpuMemoryGB)))
}

// PerGPU is how many instances of the profile one GPU holds, NVIDIA's
// published limits: 7 of 1g.5gb on an A100 40GB but 4 of 1g.10gb (memory
// bound, 8 memory slices), 3 of 2g, 2 of 3g, 1 of 4g and 7g. gpuMemoryGB
// is the GPU's memory when known (0: the profile's smallest GPU is assumed).
func (p MIGProfile) PerGPU(gpuMemoryGB int) int {
	slices := p.gpuComputeSlices(gpuMemoryGB)
	byCompute := 1
	switch {
	case slices == 4:
		byCompute = 4 / p.ComputeSlices
	case p.ComputeSlices == 1:
		byCompute = 7
	case p.ComputeSlices == 2:
		byCompute = 3
	case p.ComputeSlices == 3:
		byCompute = 2
	}
	if gpuMemoryGB <= 0 {
		return byCompute
	}
	memSlices := 8
	if slices == 4 {
		memSlices = 4
	}
	per := float64(gpuMemoryGB) / float64(memSlices)
	used := max(1, int(math.Round(float64(p.MemoryGB)/per)))
	return max(1, min(byCompute, memSlices/used))
}

// Scale converts accelerator amounts on one node into whole-device
// equivalents ("units"), so that utilization and waste compare partitions,
// replicas and cores with whole devices: a mig-1g.10gb request is 1/7 of a
// GPU, one of four time-sliced replicas a quarter, a NeuronCore of an
// Inferentia2 device half a device.
type Scale struct {
	// gpu is the weight of one nvidia.com/gpu: 1, a partition's fraction
	// on GKE partitioned pools, divided by the replicas under sharing.
	gpu float64
	// replicas divides MIG slices and nvidia.com/gpu.shared.
	replicas float64
	// core is the weight of one NeuronCore.
	core float64
	// memoryGB is the node's GPU memory when known, for MIG fractions.
	memoryGB int
}

// ScaleOf reads a node's sharing labels (GKE's partition size and shared
// clients, GPU feature discovery's replicas) and its NeuronCores per device.
func ScaleOf(node *v1.Node) Scale {
	sc := Scale{gpu: 1, replicas: 1, core: 1}
	if node == nil {
		return sc
	}
	if m, ok := ModelOfNode(node); ok {
		sc.memoryGB = m.MemoryGB
	}
	if n := positiveLabel(node, LabelGPUReplicas); n > 1 {
		sc.replicas = n
	}
	if n := positiveLabel(node, LabelGKEMaxSharedClients); n > 1 {
		sc.replicas = n
	}
	sc.gpu = 1 / sc.replicas
	// Labels absent are not parsed: a parse error allocates, and this runs
	// for every node of every loop.
	if size, ok := node.Labels[LabelGKEGPUPartitionSize]; ok {
		if p, err := ParseMIGProfile(size); err == nil {
			sc.gpu = p.Fraction(sc.memoryGB) / sc.replicas
		}
	}
	rl := node.Status.Allocatable
	if len(rl) == 0 {
		rl = node.Status.Capacity
	}
	devices := rl.Name(ResourceNeuron, "").Value()
	if devices == 0 {
		devices = rl.Name(ResourceNeuronDevice, "").Value()
	}
	if cores := rl.Name(ResourceNeuronCore, "").Value(); devices > 0 && cores > devices {
		sc.core = float64(devices) / float64(cores)
	}
	return sc
}

func positiveLabel(node *v1.Node, key string) float64 {
	l, ok := node.Labels[key]
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(l, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Weight is the units one unit of resource name is worth on the node.
func (sc Scale) Weight(name v1.ResourceName) float64 {
	switch KindOf(name) {
	case Device:
		if name == ResourceName {
			return sc.gpu
		}
		return 1
	case MIGSlice:
		p, ok := MIGProfileOf(name)
		if !ok {
			return 1 / sc.replicas
		}
		return p.Fraction(sc.memoryGB) / sc.replicas
	case Core:
		return sc.core
	case SharedReplica:
		return 1 / sc.replicas
	}
	return 0
}

// Units sums requested accelerator amounts (a pod's, or the sum of pods')
// in whole-device equivalents.
func (sc Scale) Units(scalars map[v1.ResourceName]int64) float64 {
	var u float64
	for name, v := range scalars {
		if v != 0 {
			if w := sc.Weight(name); w > 0 {
				u += float64(v) * w
			}
		}
	}
	return u
}

// Offered is what a node offers (its allocatable scalars) in whole-device
// equivalents. The Neuron device plugin advertises the same devices as
// aws.amazon.com/neuron, aws.amazon.com/neurondevice and (as cores)
// aws.amazon.com/neuroncore: they count once, as the largest of the three.
func (sc Scale) Offered(scalars map[v1.ResourceName]int64) float64 {
	var u, neuron float64
	for name, v := range scalars {
		if v <= 0 {
			continue
		}
		w := sc.Weight(name)
		switch name {
		case ResourceNeuron, ResourceNeuronDevice, ResourceNeuronCore:
			neuron = max(neuron, float64(v)*w)
		default:
			u += float64(v) * w
		}
	}
	return u + neuron
}

// OfferedList is Offered for a ResourceList.
func (sc Scale) OfferedList(rl v1.ResourceList) float64 {
	scalars := make(map[v1.ResourceName]int64, 4)
	for name, q := range rl {
		if IsGPUResource(name) {
			scalars[name] = q.Value()
		}
	}
	return sc.Offered(scalars)
}

// Devices is how many whole accelerators the node has, for --gpu-total:
// its capacity (allocatable where no capacity is given) in units, rounded,
// and at least 1 when it advertises any accelerator.
func Devices(node *v1.Node) int64 {
	rl := node.Status.Capacity
	if count(rl) == 0 {
		rl = node.Status.Allocatable
	}
	u := ScaleOf(node).OfferedList(rl)
	if u <= 0 {
		return 0
	}
	return max(1, int64(math.Round(u)))
}

// AdvertisedGPUs is how many nvidia.com/gpu a GKE node with physical GPUs
// advertises: each GPU split into partitions of partitionSize (a MIG
// profile, "" for none), each shared by sharedClients containers (0 or 1
// for no sharing). gpuMemoryGB is the GPU's memory when known.
func AdvertisedGPUs(physical int64, partitionSize string, sharedClients int64, gpuMemoryGB int) (int64, error) {
	n := physical
	if partitionSize != "" {
		p, err := ParseMIGProfile(partitionSize)
		if err != nil {
			return 0, err
		}
		n *= int64(p.PerGPU(gpuMemoryGB))
	}
	if sharedClients > 1 {
		n *= sharedClients
	}
	return n, nil
}
