package schedulerparity

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// spec draws a claim spec of up to maxRequests requests: mostly one
// ExactCount request of 1 to 3 devices of a class, sometimes all devices
// of a class, sometimes a list of alternatives (firstAvailable), sometimes
// a request selector on top of the class's, and for several GPUs sometimes
// a constraint that they share a model.
func (d *draGen) spec(maxRequests int) resourceapi.ResourceClaimSpec {
	var spec resourceapi.ResourceClaimSpec
	n := 1
	if maxRequests > 1 && d.chance(0.25) {
		n = 2
	}
	allGPU := true
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		if d.chance(0.1) {
			spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{Name: name, FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "a100", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
				{Name: "small", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}})
			continue
		}
		class := d.class()
		req := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount,
			Count: pick(d.gen, []int64{1, 1, 1, 1, 2, 2, 3})}
		// Requests for all devices, over partitionable devices too: the
		// v0.35 allocator panicked there (a nil pool), v0.37 refuses
		// the claims that overdraw the shared counters.
		if d.chance(0.08) {
			req.AllocationMode, req.Count = resourceapi.DeviceAllocationModeAll, 0
		}
		gpu := class == "gpu" || class == "a100" || class == "large-gpu" || class == "mig"
		allGPU = allGPU && gpu
		if gpu && d.chance(0.3) {
			req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: pick(d.gen, gpuSelectors)}}}
		}
		spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{Name: name, Exactly: req})
	}
	// Devices of a claim may have to share a model: across two requests,
	// or among the devices of one.
	if allGPU && (n == 2 || spec.Devices.Requests[0].Exactly != nil && spec.Devices.Requests[0].Exactly.Count > 1) && d.chance(0.4) {
		attr := resourceapi.FullyQualifiedName(GPUDriver + "/model")
		spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &attr}}
	}
	return spec
}

func (d *draGen) class() string {
	x := d.r.Float64()
	switch {
	case d.partitionable && x < 0.2:
		return "mig"
	case x < 0.03:
		return missingClass
	case x < 0.6:
		return pick(d.gen, gpuClasses)
	case x < 0.75:
		return "nic"
	case x < 0.82:
		return "fast-nic"
	}
	return "anything"
}

// pendingClaim adds the pending pod's k-th claim entry. Most claims are
// the pod's own and unallocated (by name, or generated from a template);
// some are allocated already (to a node's devices or to network-attached
// ones), shared with a running pod, missing, being deleted, or owned by
// another pod.
func (d *draGen) pendingClaim(p *v1.Pod, k int) {
	entry := fmt.Sprintf("claim-%d", k)
	name := fmt.Sprintf("%s-%s", p.Name, entry)
	pc := v1.PodResourceClaim{Name: entry, ResourceClaimName: ptr(name)}
	claim := d.claim(name, p.Namespace, d.spec(2))
	switch x := d.r.Float64(); {
	case x < 0.5:
	case x < 0.7:
		d.generated(p, &pc, claim)
	case x < 0.8:
		d.allocatedElsewhere(p, claim)
	case x < 0.85:
		if !d.sharedWithRunningPod(claim) {
			d.allocatedElsewhere(p, claim)
		}
	case x < 0.88:
		// The controller decided the entry needs no claim.
		pc.ResourceClaimName, pc.ResourceClaimTemplateName = nil, ptr("unused-template")
		p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: entry})
		claim = nil
	case x < 0.91:
		claim = nil // named but never created
	case x < 0.93:
		claim.DeletionTimestamp = ptr(metav1.Unix(1700000000, 0))
		claim.Finalizers = []string{"resource.kubernetes.io/delete-protection"}
	default:
		d.generated(p, &pc, claim)
		yes := true
		claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "someone-else", UID: "pod-uid-someone-else", Controller: &yes}}
	}
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
	if claim != nil {
		d.c.ResourceClaims = append(d.c.ResourceClaims, claim)
	}
}

// generated turns the entry into one using a template, with the claim the
// resource claim controller made for the pod recorded in its status. The
// template goes into the cluster too: kube-scheduler never reads it,
// gpuscale reads it only for claims not made yet.
func (d *draGen) generated(p *v1.Pod, pc *v1.PodResourceClaim, claim *resourceapi.ResourceClaim) {
	tmpl := "template-" + pc.Name
	claim.Name = fmt.Sprintf("%s-%s-%s", p.Name, pc.Name, pick(d.gen, []string{"x7k2p", "q9m4t"}))
	claim.UID = types.UID("claim-uid-" + claim.Name)
	yes := true
	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
	d.c.ResourceClaimTemplates = append(d.c.ResourceClaimTemplates, &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: tmpl, Namespace: p.Namespace, UID: types.UID("template-uid-" + tmpl)},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec},
	})
	pc.ResourceClaimName, pc.ResourceClaimTemplateName = nil, ptr(tmpl)
	p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: ptr(claim.Name)})
}

// allocatedElsewhere allocates the claim already: to free devices of some
// node (then it is available there only), or to a network-attached device
// (available where the fabric reaches). It may be reserved for the
// pending pod itself, as after a scheduling attempt that was not bound.
func (d *draGen) allocatedElsewhere(p *v1.Pod, claim *resourceapi.ResourceClaim) {
	if d.fabric != nil && d.chance(0.3) {
		var refs []deviceRef
		for _, dev := range d.fabric.Spec.Devices {
			if ref := (deviceRef{NICDriver, "fabric", dev.Name}); d.free[ref] && len(refs) == 0 {
				d.free[ref] = false
				refs = append(refs, ref)
			}
		}
		if len(refs) > 0 {
			claim.Status.Allocation = allocation(claim, refs, d.fabric.Spec.NodeSelector)
			return
		}
	}
	nodes := make([]string, 0, len(d.devices))
	for _, n := range d.c.Nodes {
		if len(d.devices[n.Name]) > 0 {
			nodes = append(nodes, n.Name)
		}
	}
	if len(nodes) == 0 {
		return
	}
	node := pick(d.gen, nodes)
	refs := d.take(node, 1)
	if len(refs) == 0 {
		return
	}
	claim.Status.Allocation = allocation(claim, refs, nodeOnly(node))
	if d.chance(0.3) {
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{consumerOf(p)}
	}
}

// sharedWithRunningPod makes the claim one a running pod holds already.
func (d *draGen) sharedWithRunningPod(claim *resourceapi.ResourceClaim) bool {
	for _, rp := range d.c.Pods {
		if len(d.devices[rp.Spec.NodeName]) == 0 {
			continue
		}
		refs := d.take(rp.Spec.NodeName, 1)
		if len(refs) == 0 {
			continue
		}
		claim.Status.Allocation = allocation(claim, refs, nodeOnly(rp.Spec.NodeName))
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{consumerOf(rp)}
		rp.Spec.ResourceClaims = append(rp.Spec.ResourceClaims, v1.PodResourceClaim{Name: "shared-" + claim.Name, ResourceClaimName: ptr(claim.Name)})
		return true
	}
	return false
}
