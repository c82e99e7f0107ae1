package schedulerparity

// Dynamic Resource Allocation: device classes with CEL selectors, slices
// on nodes and across nodes, claims of running pods holding devices, and
// the pending pod's claims (counts, modes, alternatives, constraints; some
// allocated already, some shared, some generated from templates).

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DRA vocabulary. Every GPU device carries every GPU attribute, so the
// request selectors below never hit a missing attribute (a CEL runtime
// error aborts the scheduling cycle; that is not what parity is about).
const (
	GPUDriver = "gpu.example.com"
	NICDriver = "nic.example.com"
)

var (
	gpuModels = []struct{ model, memory string }{{"a100", "40Gi"}, {"l4", "24Gi"}, {"h100", "80Gi"}}
	// gpuClasses select GPU devices; request selectors on GPU attributes
	// are only paired with them.
	gpuClasses   = []string{"gpu", "a100", "large-gpu"}
	gpuSelectors = []string{
		`device.attributes["gpu.example.com"].model == "l4"`,
		`device.attributes["gpu.example.com"].index < 2`,
		`device.attributes["gpu.example.com"].mig == false`,
		`device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("540.0.0"))`,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("30Gi")) >= 0`,
	}
	// missingClass is named by some requests and never created.
	missingClass = "tpu"
)

func deviceClasses(partitionable bool) []*resourceapi.DeviceClass {
	mk := func(name string, exprs ...string) *resourceapi.DeviceClass {
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("class-" + name)}}
		for _, e := range exprs {
			dc.Spec.Selectors = append(dc.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
		}
		return dc
	}
	out := []*resourceapi.DeviceClass{
		mk("gpu", `device.driver == "gpu.example.com"`),
		mk("a100", `device.driver == "gpu.example.com"`, `device.attributes["gpu.example.com"].model == "a100"`),
		mk("large-gpu", `device.driver == "gpu.example.com" && device.capacity["gpu.example.com"].memory.compareTo(quantity("32Gi")) >= 0`),
		mk("nic", `device.driver == "nic.example.com"`),
		mk("fast-nic", `device.driver == "nic.example.com" && device.attributes["nic.example.com"].speed >= 100`),
		mk("anything"),
	}
	if partitionable {
		out = append(out, mk("mig", `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].type == "mig"`))
	}
	return out
}

// draGen tracks which devices claims hold while a case is generated.
type draGen struct {
	*gen
	c *Cluster
	// devices lists each node's devices by driver; free marks those no
	// claim holds yet.
	devices map[string][]deviceRef
	free    map[deviceRef]bool
	// fabric is the network-attached slice, if any.
	fabric *resourceapi.ResourceSlice
}

type deviceRef struct{ driver, pool, device string }

// addDRA gives some clusters DRA devices and the pending pod claims.
func (g *gen) addDRA(c *Cluster, pending *v1.Pod) {
	if !g.chance(0.45) {
		return
	}
	d := &draGen{gen: g, c: c, devices: map[string][]deviceRef{}, free: map[deviceRef]bool{}}
	c.DeviceClasses = deviceClasses(g.partitionable)
	for _, n := range c.Nodes {
		d.nodeSlices(n)
	}
	if g.chance(0.12) {
		d.fabricSlice()
	}
	for _, p := range c.Pods {
		if len(d.devices[p.Spec.NodeName]) > 0 && g.chance(0.35) {
			d.holdDevices(p)
		}
	}
	if g.chance(0.75) {
		for k := range 1 + g.n(2)*g.n(2) {
			d.pendingClaim(pending, k)
		}
	}
}

// nodeSlices publishes a node's GPUs (some nodes) and NICs (fewer).
func (d *draGen) nodeSlices(n *v1.Node) {
	if d.chance(0.6) {
		count := 1 + d.n(4)
		model := pick(d.gen, gpuModels)
		var devices []resourceapi.Device
		for i := range count {
			if d.chance(0.2) {
				model = pick(d.gen, gpuModels)
			}
			devices = append(devices, d.gpuDevice(fmt.Sprintf("gpu-%d", i), i, model.model, model.memory, "gpu", false))
		}
		var counters []resourceapi.CounterSet
		if d.partitionable {
			devices, counters = d.partitions(devices)
		}
		d.publish(n.Name, GPUDriver, n.Name, devices, counters)
	}
	if d.chance(0.25) {
		var devices []resourceapi.Device
		for i := range 1 + d.n(2) {
			devices = append(devices, nicDevice(fmt.Sprintf("nic-%d", i), pick(d.gen, []int64{25, 100})))
		}
		d.publish(n.Name, NICDriver, n.Name, devices, nil)
	}
}

func (d *draGen) gpuDevice(name string, index int, model, memory, typ string, mig bool) resourceapi.Device {
	ver := pick(d.gen, []string{"535.104.5", "550.54.15"})
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model": {StringValue: ptr(model)}, "index": {IntValue: ptr(int64(index))}, "mig": {BoolValue: ptr(mig)},
			"type": {StringValue: ptr(typ)}, "driverVersion": {VersionValue: ptr(ver)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
	}
}

func nicDevice(name string, speed int64) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"speed": {IntValue: ptr(speed)}, "rdma": {BoolValue: ptr(speed >= 100)},
	}}
}

// partitions publishes each GPU as partitionable devices do: the whole GPU
// and its MIG-like slices all draw on the GPU's counters (7 compute and 8
// memory slices), so taking the whole GPU leaves no slice and the other
// way round.
func (d *draGen) partitions(gpus []resourceapi.Device) ([]resourceapi.Device, []resourceapi.CounterSet) {
	var devices []resourceapi.Device
	var sets []resourceapi.CounterSet
	draw := func(set string, compute, memory int64) []resourceapi.DeviceCounterConsumption {
		return []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
			"compute": {Value: *resource.NewQuantity(compute, resource.DecimalSI)},
			"memory":  {Value: *resource.NewQuantity(memory, resource.DecimalSI)},
		}}}
	}
	for i, whole := range gpus {
		set := fmt.Sprintf("gpu-%d-counters", i)
		sets = append(sets, resourceapi.CounterSet{Name: set, Counters: map[string]resourceapi.Counter{
			"compute": {Value: resource.MustParse("7")}, "memory": {Value: resource.MustParse("8")},
		}})
		whole.ConsumesCounters = draw(set, 7, 8)
		devices = append(devices, whole)
		model := *whole.Attributes["model"].StringValue
		for k := range 1 + d.n(3) {
			s := d.gpuDevice(fmt.Sprintf("gpu-%d-mig-1g-%d", i, k), i, model, "5Gi", "mig", true)
			s.ConsumesCounters = draw(set, 1, 1)
			devices = append(devices, s)
		}
		if d.chance(0.6) {
			s := d.gpuDevice(fmt.Sprintf("gpu-%d-mig-4g-0", i), i, model, "20Gi", "mig", true)
			s.ConsumesCounters = draw(set, 4, 4)
			devices = append(devices, s)
		}
	}
	return devices, sets
}

// publish adds the slice (and, with counters, the pool's counter slice) of
// one node and driver. Rarely the pool is left incomplete: it announces one
// slice more than it has, and the allocator must not use it.
func (d *draGen) publish(node, driver, pool string, devices []resourceapi.Device, counters []resourceapi.CounterSet) {
	count := int64(1)
	if counters != nil {
		count = 2
	}
	if d.chance(0.03) {
		count++
	}
	mk := func(suffix string) *resourceapi.ResourceSlice {
		name := node + "-" + driver + suffix
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("slice-" + name)},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr(node),
				Pool: resourceapi.ResourcePool{Name: pool, ResourceSliceCount: count}},
		}
	}
	sl := mk("")
	sl.Spec.Devices = devices
	d.c.ResourceSlices = append(d.c.ResourceSlices, sl)
	if counters != nil {
		cs := mk("-counters")
		cs.Spec.SharedCounters = counters
		d.c.ResourceSlices = append(d.c.ResourceSlices, cs)
	}
	complete := count == 1 || (counters != nil && count == 2)
	for _, dev := range devices {
		ref := deviceRef{driver, pool, dev.Name}
		d.devices[node] = append(d.devices[node], ref)
		d.free[ref] = complete
	}
}

// fabricSlice publishes network-attached NICs reachable from all nodes or
// from one zone's nodes.
func (d *draGen) fabricSlice() {
	sl := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "fabric", UID: "slice-fabric"},
		Spec: resourceapi.ResourceSliceSpec{Driver: NICDriver, Pool: resourceapi.ResourcePool{Name: "fabric", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{nicDevice("fabric-0", 100), nicDevice("fabric-1", 100)}},
	}
	if d.chance(0.5) {
		sl.Spec.AllNodes = ptr(true)
	} else {
		sl.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{"zone-a"}}}}}}
	}
	d.c.ResourceSlices = append(d.c.ResourceSlices, sl)
	d.fabric = sl
	for _, dev := range sl.Spec.Devices {
		d.free[deviceRef{NICDriver, "fabric", dev.Name}] = true
	}
}

// take marks up to n free devices of node as held and returns them.
func (d *draGen) take(node string, n int) []deviceRef {
	var out []deviceRef
	for _, j := range d.r.Perm(len(d.devices[node])) {
		ref := d.devices[node][j]
		if d.free[ref] && len(out) < n {
			d.free[ref] = false
			out = append(out, ref)
		}
	}
	return out
}

// holdDevices gives a running pod a claim allocated to devices of its node.
func (d *draGen) holdDevices(p *v1.Pod) {
	refs := d.take(p.Spec.NodeName, 1+d.n(2))
	if len(refs) == 0 {
		return
	}
	name := p.Name + "-devices"
	claim := d.claim(name, p.Namespace, d.spec(1))
	claim.Status.Allocation = allocation(claim, refs, nodeOnly(p.Spec.NodeName))
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{consumerOf(p)}
	d.c.ResourceClaims = append(d.c.ResourceClaims, claim)
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "devices", ResourceClaimName: ptr(name)})
}

func (d *draGen) claim(name, ns string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("claim-uid-" + name)}, Spec: spec}
}

// allocation allocates refs to the claim's first request (its last
// alternative when it lists some), as an allocation result names it.
func allocation(claim *resourceapi.ResourceClaim, refs []deviceRef, sel *v1.NodeSelector) *resourceapi.AllocationResult {
	req := claim.Spec.Devices.Requests[0]
	name := req.Name
	if n := len(req.FirstAvailable); n > 0 {
		name += "/" + req.FirstAvailable[n-1].Name
	}
	a := &resourceapi.AllocationResult{NodeSelector: sel}
	for _, r := range refs {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: name, Driver: r.driver, Pool: r.pool, Device: r.device})
	}
	return a
}

func nodeOnly(node string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}
}

func consumerOf(p *v1.Pod) resourceapi.ResourceClaimConsumerReference {
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID}
}
