package schedulerparity

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// limitedDrivers are the drivers CSINodes limit: the one the volumes and
// classes use, and the one inline GCE PDs migrate to.
var limitedDrivers = []string{"ebs.csi.aws.com", "pd.csi.storage.gke.io"}

// addAttachLimits (NodeVolumeLimits) gives some nodes a CSINode with small
// attach limits (or a driver without one), and some running pods CSI
// volumes: claims shared within a namespace (bound to a volume, or waiting
// for their first consumer), and now and then a claim of the pending pod,
// so that a volume is attached already.
func (g *gen) addAttachLimits(c *Cluster, pending *v1.Pod) {
	if !g.chance(0.5) {
		return
	}
	for _, n := range c.Nodes {
		if !g.chance(0.75) {
			continue
		}
		cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID("csinode-" + n.Name)}}
		for _, d := range limitedDrivers {
			if !g.chance(0.7) {
				continue
			}
			drv := storagev1.CSINodeDriver{Name: d, NodeID: n.Name}
			if g.chance(0.85) {
				drv.Allocatable = &storagev1.VolumeNodeResources{Count: ptr(int32(g.n(4)))}
			}
			cn.Spec.Drivers = append(cn.Spec.Drivers, drv)
		}
		c.CSINodes = append(c.CSINodes, cn)
	}
	for _, p := range c.Pods {
		if !g.chance(0.5) {
			continue
		}
		for range 1 + g.n(2) {
			claim := fmt.Sprintf("att-%d", g.n(4))
			if p.Namespace == pending.Namespace && g.chance(0.15) {
				claim = fmt.Sprintf("data-%d", g.n(2))
			} else {
				g.attachedClaim(c, p.Namespace, claim)
			}
			if slices.ContainsFunc(p.Spec.Volumes, func(v v1.Volume) bool { return v.Name == claim }) {
				continue
			}
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: claim, VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		}
	}
}

// attachedClaim makes claim in ns once: bound to a CSI volume (whose
// handle may be one the pending pod's volumes use), waiting for its first
// consumer, or bound to a volume that does not exist.
func (g *gen) attachedClaim(c *Cluster, ns, claim string) {
	if slices.ContainsFunc(c.PersistentVolumeClaims, func(pvc *v1.PersistentVolumeClaim) bool {
		return pvc.Namespace == ns && pvc.Name == claim
	}) {
		return
	}
	pvc := newClaim(claim, ns)
	pvc.Spec.StorageClassName = ptr(wffcClass)
	c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, pvc)
	if g.chance(0.25) {
		return // waiting for its first consumer: counted by the class's provisioner
	}
	pvName := "pv-" + ns + "-" + claim
	pvc.Spec.VolumeName = pvName
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: pvc.Spec.Resources.Requests.DeepCopy()}
	if g.chance(0.1) {
		return // its volume is gone: counted by the class's provisioner
	}
	handle := "vol-" + pvName
	if g.chance(0.2) { // the handle of a volume the pending pod may mount
		handle = fmt.Sprintf("vol-pv-%d", g.n(2))
	}
	c.PersistentVolumes = append(c.PersistentVolumes, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, UID: types.UID("pv-uid-" + pvName)},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes: pvc.Spec.AccessModes,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: handle}},
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim,
				UID: pvc.UID, APIVersion: "v1"},
			StorageClassName:              wffcClass,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	})
}
