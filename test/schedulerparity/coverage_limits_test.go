package schedulerparity

import (
	v1 "k8s.io/api/core/v1"
)

// limitWantFeatures are the NodeVolumeLimits features each wanted with a
// feasible and an infeasible node.
var limitWantFeatures = []string{"csinode:limit", "csinode:noLimit", "csinode:limit0",
	"limits:claimAttachedAlready", "limits:inlineDisk", "limits:existingUnbound"}

// limitFeatures tags what a case exercises of attach limits.
func limitFeatures(c *Cluster, p *v1.Pod) []string {
	var f []string
	add := func(ok bool, tag string) {
		if ok {
			f = append(f, tag)
		}
	}
	if len(c.CSINodes) == 0 {
		return nil
	}
	for _, cn := range c.CSINodes {
		for _, d := range cn.Spec.Drivers {
			add(d.Allocatable == nil || d.Allocatable.Count == nil, "csinode:noLimit")
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				add(true, "csinode:limit")
				add(*d.Allocatable.Count == 0, "csinode:limit0")
			}
		}
	}
	mounted := map[string]bool{} // claims of the pending pod's namespace that running pods mount
	unbound := false
	for _, rp := range c.Pods {
		for _, vol := range rp.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil {
				continue
			}
			if rp.Namespace == p.Namespace {
				mounted[vol.PersistentVolumeClaim.ClaimName] = true
			}
			for _, pvc := range c.PersistentVolumeClaims {
				if pvc.Namespace == rp.Namespace && pvc.Name == vol.PersistentVolumeClaim.ClaimName && pvc.Spec.VolumeName == "" {
					unbound = true
				}
			}
		}
	}
	add(unbound, "limits:existingUnbound")
	for _, vol := range p.Spec.Volumes {
		add(vol.PersistentVolumeClaim != nil && mounted[vol.PersistentVolumeClaim.ClaimName], "limits:claimAttachedAlready")
		add(vol.AWSElasticBlockStore != nil || vol.GCEPersistentDisk != nil, "limits:inlineDisk")
	}
	return dedupe(f)
}

func dedupe(f []string) []string {
	seen := map[string]bool{}
	out := f[:0]
	for _, s := range f {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
