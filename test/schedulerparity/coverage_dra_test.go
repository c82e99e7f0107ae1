package schedulerparity

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// draWantFeatures must each occur in a case with a feasible node and in
// one with an infeasible node; draInfeasibleFeatures only ever infeasible.
var (
	draWantFeatures = []string{
		"dra:claim", "dra:template", "dra:notNeeded", "dra:allocated", "dra:shared", "dra:heldDevices",
		"dra:fabric", "dra:count>1", "dra:all", "dra:firstAvailable", "dra:constraint", "dra:requestSelector",
		"dra:class:gpu", "dra:class:a100", "dra:class:large-gpu", "dra:class:nic", "dra:class:fast-nic", "dra:class:anything",
	}
	draInfeasibleFeatures = []string{"dra:missingClaim", "dra:class:" + missingClass, "dra:deleting", "dra:foreignOwner"}
)

// draFeatures tags what a case exercises of Dynamic Resource Allocation.
func draFeatures(c *Cluster, p *v1.Pod) []string {
	var f []string
	add := func(ok bool, tag string) {
		if ok {
			f = append(f, tag)
		}
	}
	find := func(name string) *resourceapi.ResourceClaim {
		i := slices.IndexFunc(c.ResourceClaims, func(rc *resourceapi.ResourceClaim) bool { return rc.Name == name })
		if i < 0 {
			return nil
		}
		return c.ResourceClaims[i]
	}
	for _, sl := range c.ResourceSlices {
		add(sl.Spec.NodeName == nil, "dra:fabric")
	}
	for _, rp := range c.Pods {
		add(len(rp.Spec.ResourceClaims) > 0, "dra:heldDevices")
	}
	for _, pc := range p.Spec.ResourceClaims {
		f = append(f, "dra:claim")
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		} else {
			f = append(f, "dra:template")
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == pc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
			if name == "" {
				f = append(f, "dra:notNeeded")
				continue
			}
		}
		rc := find(name)
		if rc == nil {
			f = append(f, "dra:missingClaim")
			continue
		}
		add(rc.DeletionTimestamp != nil, "dra:deleting")
		add(pc.ResourceClaimTemplateName != nil && (len(rc.OwnerReferences) == 0 || rc.OwnerReferences[0].UID != p.UID), "dra:foreignOwner")
		if rc.Status.Allocation != nil {
			f = append(f, "dra:allocated")
			for _, r := range rc.Status.ReservedFor {
				add(r.Name != p.Name, "dra:shared")
			}
			continue
		}
		add(len(rc.Spec.Devices.Constraints) > 0, "dra:constraint")
		for _, r := range rc.Spec.Devices.Requests {
			if len(r.FirstAvailable) > 0 {
				f = append(f, "dra:firstAvailable")
				continue
			}
			e := r.Exactly
			f = append(f, "dra:class:"+e.DeviceClassName)
			add(e.AllocationMode == resourceapi.DeviceAllocationModeAll, "dra:all")
			add(e.Count > 1, "dra:count>1")
			add(len(e.Selectors) > 0, "dra:requestSelector")
		}
	}
	return f
}
