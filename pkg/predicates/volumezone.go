package predicates

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// zoneLabels are the node and volume labels that place a volume; beta
// labels on a volume also match the GA label on a node.
var zoneLabels = [...]string{
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
}

// volumeTopology is one topology label of a volume the pod uses: the node
// must carry key with one of values.
type volumeTopology struct {
	pv     string
	key    string
	values []string
}

// prepareVolumes resolves the pod's claims to volumes and collects their
// zone and region labels. A claim that cannot be resolved makes the pod
// unschedulable everywhere, as in kube-scheduler.
func (pc *PodCheck) prepareVolumes() Result {
	for i := range pc.pod.Spec.Volumes {
		src := pc.pod.Spec.Volumes[i].PersistentVolumeClaim
		if src == nil {
			continue
		}
		if r := pc.addClaimTopology(src.ClaimName); !r.Fits() {
			return r
		}
	}
	return Result{}
}

func (pc *PodCheck) addClaimTopology(claim string) Result {
	fail := func(format string, args ...any) Result {
		return Result{Predicate: VolumeZone, Reason: ReasonVolumeUnresolvable, Detail: fmt.Sprintf(format, args...)}
	}
	if claim == "" {
		return fail("a volume names a PersistentVolumeClaim with no name")
	}
	pvc := pc.checker.snap.PersistentVolumeClaim(pc.pod.Namespace, claim)
	if pvc == nil {
		return fail("PersistentVolumeClaim %s/%s not found", pc.pod.Namespace, claim)
	}
	if pvc.Spec.VolumeName == "" {
		class := claimClass(pvc)
		if class == "" {
			return fail("PersistentVolumeClaim %s/%s is unbound and names no storage class", pvc.Namespace, claim)
		}
		sc := pc.checker.snap.StorageClass(class)
		switch {
		case sc == nil:
			return fail("StorageClass %s of PersistentVolumeClaim %s/%s not found", class, pvc.Namespace, claim)
		case sc.VolumeBindingMode == nil:
			return fail("StorageClass %s sets no volumeBindingMode", class)
		case *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer:
			return Result{} // bound later, where the pod lands
		}
		return fail("PersistentVolumeClaim %s/%s is not bound yet", pvc.Namespace, claim)
	}
	pv := pc.checker.snap.PersistentVolume(pvc.Spec.VolumeName)
	if pv == nil {
		return fail("PersistentVolume %s of claim %s/%s not found", pvc.Spec.VolumeName, pvc.Namespace, claim)
	}
	for _, key := range zoneLabels {
		value, ok := pv.Labels[key]
		if !ok {
			continue
		}
		if zones, ok := splitZones(value); ok {
			pc.vol.zones = append(pc.vol.zones, volumeTopology{pv: pv.Name, key: key, values: zones})
		}
	}
	return Result{}
}

// splitZones parses a multi-zone label value "a__b"; an empty element makes
// the whole value unusable and the label is ignored.
func splitZones(value string) ([]string, bool) {
	parts := strings.Split(value, "__")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, false
		}
		parts[i] = p
	}
	return parts, true
}

func (pc *PodCheck) checkVolumeZone(ni *snapshot.NodeInfo) Result {
	if len(pc.vol.zones) == 0 {
		return Result{}
	}
	labels := ni.Node.Labels
	constrained := false
	for _, k := range zoneLabels {
		if _, ok := labels[k]; ok {
			constrained = true
			break
		}
	}
	if !constrained {
		return Result{} // a node with no zone labels accepts any volume
	}
	for i := range pc.vol.zones {
		vt := &pc.vol.zones[i]
		v, ok := labels[vt.key]
		if !ok {
			v, ok = labels[gaZoneLabel(vt.key)]
		}
		if !ok || !contains(vt.values, v) {
			return Result{Predicate: VolumeZone, Reason: ReasonVolumeZone, Detail: vt.pv, Detail2: vt.key}
		}
	}
	return Result{}
}

func gaZoneLabel(key string) string {
	switch key {
	case v1.LabelFailureDomainBetaZone:
		return v1.LabelTopologyZone
	case v1.LabelFailureDomainBetaRegion:
		return v1.LabelTopologyRegion
	}
	return key
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// claimClass is the claim's storage class: the beta annotation first, as
// kube-scheduler reads it, then spec.storageClassName. (component-helpers
// has the same function, in a package that would link client-go into the
// decision core.)
func claimClass(pvc *v1.PersistentVolumeClaim) string {
	if class, ok := pvc.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}
