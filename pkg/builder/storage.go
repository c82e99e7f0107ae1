package builder

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeBuilder builds a PersistentVolume of 10Gi, ReadWriteOnce.
type VolumeBuilder struct{ pv *v1.PersistentVolume }

// Volume starts a PersistentVolume.
func Volume(name string) *VolumeBuilder {
	return &VolumeBuilder{pv: &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		},
	}}
}

// Zone pins the volume to a zone the way CSI drivers do: required node
// affinity on key In values.
func (b *VolumeBuilder) Zone(key string, values ...string) *VolumeBuilder {
	b.pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
	}}}}
	return b
}

// Class sets the storage class.
func (b *VolumeBuilder) Class(name string) *VolumeBuilder {
	b.pv.Spec.StorageClassName = name
	return b
}

// Available marks the volume free to bind.
func (b *VolumeBuilder) Available() *VolumeBuilder { b.pv.Status.Phase = v1.VolumeAvailable; return b }

// Build returns the volume.
func (b *VolumeBuilder) Build() *v1.PersistentVolume { return b.pv }

// VolumeClaimBuilder builds a PersistentVolumeClaim in namespace
// "default" asking for 1Gi, ReadWriteOnce.
type VolumeClaimBuilder struct{ pvc *v1.PersistentVolumeClaim }

// VolumeClaim starts a PersistentVolumeClaim.
func VolumeClaim(name string) *VolumeClaimBuilder {
	return &VolumeClaimBuilder{pvc: &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
}

// BoundTo binds the claim to a volume, as the PersistentVolume controller
// leaves a bound claim (volumeName and the bind-completed annotation).
func (b *VolumeClaimBuilder) BoundTo(pv string) *VolumeClaimBuilder {
	b.pvc.Spec.VolumeName = pv
	if b.pvc.Annotations == nil {
		b.pvc.Annotations = map[string]string{}
	}
	b.pvc.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	b.pvc.Status.Phase = v1.ClaimBound
	return b
}

// Class sets the storage class.
func (b *VolumeClaimBuilder) Class(name string) *VolumeClaimBuilder {
	b.pvc.Spec.StorageClassName = &name
	return b
}

// Build returns the claim.
func (b *VolumeClaimBuilder) Build() *v1.PersistentVolumeClaim { return b.pvc }

// StorageClassBuilder builds a StorageClass with a CSI provisioner that
// binds immediately.
type StorageClassBuilder struct{ sc *storagev1.StorageClass }

// StorageClass starts a StorageClass.
func StorageClass(name string) *StorageClassBuilder {
	mode := storagev1.VolumeBindingImmediate
	return &StorageClassBuilder{sc: &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "ebs.csi.aws.com",
		VolumeBindingMode: &mode,
	}}
}

// WaitForFirstConsumer binds the class's claims where their first pod lands.
func (b *StorageClassBuilder) WaitForFirstConsumer() *StorageClassBuilder {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	b.sc.VolumeBindingMode = &mode
	return b
}

// Provisioner sets the provisioner ("kubernetes.io/no-provisioner" for
// static volumes only).
func (b *StorageClassBuilder) Provisioner(p string) *StorageClassBuilder {
	b.sc.Provisioner = p
	return b
}

// AllowedTopology restricts provisioning to nodes with key in values.
func (b *StorageClassBuilder) AllowedTopology(key string, values ...string) *StorageClassBuilder {
	b.sc.AllowedTopologies = append(b.sc.AllowedTopologies, v1.TopologySelectorTerm{
		MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: key, Values: values}}})
	return b
}

// Build returns the class.
func (b *StorageClassBuilder) Build() *storagev1.StorageClass { return b.sc }

// EphemeralVolume mounts a generic ephemeral volume whose claim template
// asks for 1Gi of class.
func (b *PodBuilder) EphemeralVolume(name, class string) *PodBuilder {
	spec := VolumeClaim("").Class(class).Build().Spec
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: spec}}}})
	return b
}

// CSI makes the volume one of a CSI driver with the given volume handle.
func (b *VolumeBuilder) CSI(driver, handle string) *VolumeBuilder {
	b.pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
	return b
}

// CSINodeBuilder builds the CSINode of a node.
type CSINodeBuilder struct{ cn *storagev1.CSINode }

// CSINode starts the CSINode of the node named node, with no drivers.
func CSINode(node string) *CSINodeBuilder {
	return &CSINodeBuilder{cn: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}}
}

// Driver registers a driver that can attach up to limit volumes to the node.
func (b *CSINodeBuilder) Driver(name string, limit int32) *CSINodeBuilder {
	b.cn.Spec.Drivers = append(b.cn.Spec.Drivers, storagev1.CSINodeDriver{
		Name: name, NodeID: b.cn.Name, Allocatable: &storagev1.VolumeNodeResources{Count: &limit}})
	return b
}

// Build returns the CSINode.
func (b *CSINodeBuilder) Build() *storagev1.CSINode { return b.cn }
