package builder

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeviceClass is a DeviceClass with optional CEL selectors:
//
//	builder.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`)
func DeviceClass(name string, selectors ...string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("class-" + name)},
		Spec:       resourceapi.DeviceClassSpec{Selectors: celSelectors(selectors)},
	}
}

func celSelectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

// DeviceBuilder builds one device of a ResourceSlice.
type DeviceBuilder struct{ d resourceapi.Device }

// Device starts a device without attributes.
func Device(name string) *DeviceBuilder { return &DeviceBuilder{d: resourceapi.Device{Name: name}} }

// Attr sets an attribute: a string, bool, int or int64 value.
func (b *DeviceBuilder) Attr(name string, value any) *DeviceBuilder {
	if b.d.Attributes == nil {
		b.d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	}
	var a resourceapi.DeviceAttribute
	switch v := value.(type) {
	case string:
		a.StringValue = &v
	case bool:
		a.BoolValue = &v
	case int:
		n := int64(v)
		a.IntValue = &n
	case int64:
		a.IntValue = &v
	default:
		panic(fmt.Sprintf("builder: attribute %s: unsupported value %T", name, value))
	}
	b.d.Attributes[resourceapi.QualifiedName(name)] = a
	return b
}

// Capacity sets a capacity.
func (b *DeviceBuilder) Capacity(name, qty string) *DeviceBuilder {
	if b.d.Capacity == nil {
		b.d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	}
	b.d.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: resource.MustParse(qty)}
	return b
}

// Build returns the device.
func (b *DeviceBuilder) Build() resourceapi.Device { return b.d }

// Devices makes n devices named prefix0, prefix1, ... without attributes.
func Devices(prefix string, n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = resourceapi.Device{Name: fmt.Sprintf("%s%d", prefix, i)}
	}
	return out
}

// NodeSlice is the ResourceSlice a driver publishes for one node: pool
// named after the node, one slice in the pool.
func NodeSlice(node, driver string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	n := node
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver, UID: types.UID("slice-" + node + "-" + driver)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver, NodeName: &n, Devices: devices,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
		},
	}
}

// ClaimBuilder builds a ResourceClaim in namespace "default".
type ClaimBuilder struct{ c *resourceapi.ResourceClaim }

// Claim starts a claim with no requests.
func Claim(name string) *ClaimBuilder {
	return &ClaimBuilder{c: &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("claim-" + name)},
	}}
}

// Namespace sets the namespace.
func (b *ClaimBuilder) Namespace(ns string) *ClaimBuilder { b.c.Namespace = ns; return b }

// Request adds an ExactCount request of count devices of class, with
// optional CEL selectors.
func (b *ClaimBuilder) Request(name, class string, count int64, selectors ...string) *ClaimBuilder {
	b.c.Spec.Devices.Requests = append(b.c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: name,
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count,
			AllocationMode: resourceapi.DeviceAllocationModeExactCount, Selectors: celSelectors(selectors)}})
	return b
}

// RequestAll adds a request for all devices of class on the node.
func (b *ClaimBuilder) RequestAll(name, class string, selectors ...string) *ClaimBuilder {
	b.c.Spec.Devices.Requests = append(b.c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: name,
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
			AllocationMode: resourceapi.DeviceAllocationModeAll, Selectors: celSelectors(selectors)}})
	return b
}

// OwnedBy makes the claim one generated from a template for pod.
func (b *ClaimBuilder) OwnedBy(pod *v1.Pod) *ClaimBuilder {
	yes := true
	b.c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes}}
	return b
}

// Allocated marks the claim allocated to devices of driver in the pool
// named after node, available on that node only, and reserved for pods.
func (b *ClaimBuilder) Allocated(node, driver string, devices []string, pods ...*v1.Pod) *ClaimBuilder {
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	req := ""
	if len(b.c.Spec.Devices.Requests) > 0 {
		req = b.c.Spec.Devices.Requests[0].Name
	}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: req, Driver: driver, Pool: node, Device: d})
	}
	b.c.Status.Allocation = a
	for _, p := range pods {
		b.c.Status.ReservedFor = append(b.c.Status.ReservedFor,
			resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return b
}

// Build returns the claim.
func (b *ClaimBuilder) Build() *resourceapi.ResourceClaim { return b.c }

// ClaimTemplate is a ResourceClaimTemplate with the spec of claim.
func ClaimTemplate(name string, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: claim.Namespace, UID: types.UID("template-" + name)},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec},
	}
}

// ResourceClaim makes the pod use a claim by name (entry named like it).
func (b *PodBuilder) ResourceClaim(claim string) *PodBuilder {
	name := claim
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: claim, ResourceClaimName: &name})
	return b
}

// ResourceClaimTemplate makes the pod use a claim generated from a
// template; entry is the name of the pod's entry. Until GeneratedClaim is
// called the resource claim controller has not made the claim yet.
func (b *PodBuilder) ResourceClaimTemplate(entry, template string) *PodBuilder {
	t := template
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: entry, ResourceClaimTemplateName: &t})
	return b
}

// GeneratedClaim records in the pod's status the claim the resource claim
// controller made for its entry.
func (b *PodBuilder) GeneratedClaim(entry, claim string) *PodBuilder {
	c := claim
	b.pod.Status.ResourceClaimStatuses = append(b.pod.Status.ResourceClaimStatuses,
		v1.PodResourceClaimStatus{Name: entry, ResourceClaimName: &c})
	return b
}
