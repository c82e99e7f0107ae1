package predicates_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// csiZone is the topology key the EBS CSI driver writes on the volumes it
// provisions: no legacy zone label, only node affinity.
const csiZone = "topology.ebs.csi.aws.com/zone"

type storage struct {
	volumes []*v1.PersistentVolume
	claims  []*v1.PersistentVolumeClaim
	classes []*storagev1.StorageClass
}

func (st storage) setup(s *snapshot.Snapshot) {
	for _, pv := range st.volumes {
		_ = s.SetPersistentVolume(pv)
	}
	for _, pvc := range st.claims {
		_ = s.SetPersistentVolumeClaim(pvc)
	}
	for _, sc := range st.classes {
		_ = s.SetStorageClass(sc)
	}
}

// TestVolumeBinding checks each rule of kube-scheduler's VolumeBinding
// filter on node "target" (zone a) beside node "other" (zone b).
func TestVolumeBinding(t *testing.T) {
	target := builder.Node("target").Zone("a").Label(csiZone, "a").Build()
	other := builder.Node("other").Zone("b").Label(csiZone, "b").Build()
	wffc := builder.StorageClass("wffc").WaitForFirstConsumer().Build()
	inZoneB := builder.StorageClass("zonal-b").WaitForFirstConsumer().AllowedTopology(v1.LabelTopologyZone, "b").Build()
	local := builder.StorageClass("local").WaitForFirstConsumer().Provisioner("kubernetes.io/no-provisioner").Build()
	immediate := builder.StorageClass("now").Build()
	selected := builder.VolumeClaim("picked").Class("wffc").Build()
	selected.Annotations = map[string]string{"volume.kubernetes.io/selected-node": "other"}
	preBound := builder.VolumeClaim("prebound").Build()
	preBound.Spec.VolumeName = "pv-a"
	deleting := builder.VolumeClaim("going").BoundTo("pv-a").Build()
	deleting.DeletionTimestamp = &metav1.Time{}
	notOwned := builder.VolumeClaim("p-scratch").Class("wffc").Build()
	cases := []struct {
		name    string
		storage storage
		pod     *v1.Pod
		want    predicates.Predicate
		message string
	}{
		{"bound volume pinned to the node's zone by a CSI key",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-a").Zone(csiZone, "a").Build()},
				claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").BoundTo("pv-a").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.Fits, "fits"},
		{"bound volume pinned to another zone by a CSI key",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-b").Zone(csiZone, "b").Build()},
				claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").BoundTo("pv-b").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding,
			"node is outside the node affinity of volume data (claim default/data, PersistentVolume pv-b), which needs topology.ebs.csi.aws.com/zone in [b]"},
		{"bound volume without node affinity goes anywhere",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("nfs").Build()},
				claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").BoundTo("nfs").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.Fits, "fits"},
		{"claim bound to a missing volume",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").BoundTo("gone").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding, "volume data: PersistentVolume gone of claim default/data not found"},
		{"missing claim",
			storage{}, builder.Pod("p").Claim("data").Build(), predicates.VolumeRestrictions, "volume data: PersistentVolumeClaim default/data not found"},
		{"claim being deleted",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-a").Build()}, claims: []*v1.PersistentVolumeClaim{deleting}},
			builder.Pod("p").Claim("going").Build(), predicates.VolumeBinding, "PersistentVolumeClaim default/going is being deleted"},
		{"unbound claim of an Immediate class waits for its volume",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("now").Build()}, classes: []*storagev1.StorageClass{immediate}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding, "PersistentVolumeClaim default/data is not bound yet (StorageClass now binds Immediate"},
		{"pre-bound claim waits for the volume controller",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-a").Build()}, claims: []*v1.PersistentVolumeClaim{preBound}},
			builder.Pod("p").Claim("prebound").Build(), predicates.VolumeBinding, "is not bound yet (it names PersistentVolume pv-a"},
		{"unbound claim whose class is missing",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("gone").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding, "its StorageClass gone is not found"},
		{"unbound claim without a class",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Build()}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding, "names no StorageClass"},
		{"unbound claim of a first-consumer class with a provisioner",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("wffc").Build()}, classes: []*storagev1.StorageClass{wffc}},
			builder.Pod("p").Claim("data").Build(), predicates.Fits, "fits"},
		{"first-consumer class allows only another zone",
			storage{claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("zonal-b").Build()}, classes: []*storagev1.StorageClass{inZoneB}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding,
			"node cannot bind volume data (claim default/data, StorageClass zonal-b, unbound): no available PersistentVolume fits, and StorageClass zonal-b provisions only where topology.kubernetes.io/zone in [b]"},
		{"claim being provisioned for another node",
			storage{claims: []*v1.PersistentVolumeClaim{selected}, classes: []*storagev1.StorageClass{wffc}},
			builder.Pod("p").Claim("picked").Build(), predicates.VolumeBinding, "it is being provisioned for node other"},
		{"static local volume on the node",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("local-a").Class("local").Zone(v1.LabelHostname, "target").Available().Build()},
				claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("local").Build()}, classes: []*storagev1.StorageClass{local}},
			builder.Pod("p").Claim("data").Build(), predicates.Fits, "fits"},
		{"static local volume on another node only",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("local-o").Class("local").Zone(v1.LabelHostname, "other").Available().Build()},
				claims: []*v1.PersistentVolumeClaim{builder.VolumeClaim("data").Class("local").Build()}, classes: []*storagev1.StorageClass{local}},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeBinding, "no available PersistentVolume of StorageClass local fits, and the class provisions none"},
		{"two claims cannot share one static volume",
			storage{volumes: []*v1.PersistentVolume{builder.Volume("local-a").Class("local").Zone(v1.LabelHostname, "target").Available().Build()},
				claims:  []*v1.PersistentVolumeClaim{builder.VolumeClaim("d1").Class("local").Build(), builder.VolumeClaim("d2").Class("local").Build()},
				classes: []*storagev1.StorageClass{local}},
			builder.Pod("p").Claim("d1").Claim("d2").Build(), predicates.VolumeBinding, "volume d2"},
		{"ephemeral volume not made yet stands as an unbound claim of its class",
			storage{classes: []*storagev1.StorageClass{inZoneB}},
			builder.Pod("p").EphemeralVolume("scratch", "zonal-b").Build(), predicates.VolumeBinding, "volume scratch (claim default/p-scratch, StorageClass zonal-b, unbound)"},
		{"ephemeral claim made for another pod",
			storage{claims: []*v1.PersistentVolumeClaim{notOwned}, classes: []*storagev1.StorageClass{wffc}},
			builder.Pod("p").EphemeralVolume("scratch", "wffc").Build(), predicates.VolumeBinding, "was not created for pod default/p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster{nodes: []*v1.Node{target, other}, setup: tc.storage.setup}.build(t)
			pc, err := predicates.New(s).Prepare(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			r := pc.Check(s.Node("target"))
			if r.Predicate != tc.want {
				t.Fatalf("predicate = %v (%s), want %v", r.Predicate, r, tc.want)
			}
			if !strings.Contains(r.String(), tc.message) {
				t.Errorf("message %q does not contain %q", r.String(), tc.message)
			}
		})
	}
}

// TestEphemeralClaimOfThePod: the claim the ephemeral volume controller
// made for the pod is used as it is, bound volume included.
func TestEphemeralClaimOfThePod(t *testing.T) {
	pod := builder.Pod("p").EphemeralVolume("scratch", "wffc").Build()
	claim := builder.VolumeClaim("p-scratch").Class("wffc").BoundTo("pv-b").Build()
	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: pod.UID, Controller: ptrTo(true)}}
	st := storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-b").Zone(v1.LabelTopologyZone, "b").Build()},
		claims: []*v1.PersistentVolumeClaim{claim}, classes: []*storagev1.StorageClass{builder.StorageClass("wffc").WaitForFirstConsumer().Build()}}
	s := cluster{nodes: []*v1.Node{builder.Node("a1").Zone("a").Build(), builder.Node("b1").Zone("b").Build()}, setup: st.setup}.build(t)
	pc, err := predicates.New(s).Prepare(pod)
	if err != nil {
		t.Fatal(err)
	}
	if r := pc.Check(s.Node("a1")); r.Predicate != predicates.VolumeBinding || !strings.Contains(r.String(), "PersistentVolume pv-b") {
		t.Errorf("zone a: %s, want the bound volume's affinity to refuse it", r)
	}
	if r := pc.Check(s.Node("b1")); !r.Fits() {
		t.Errorf("zone b: %s, want fits", r)
	}
}

func ptrTo[T any](v T) *T { return &v }
