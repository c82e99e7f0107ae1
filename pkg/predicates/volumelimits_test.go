package predicates_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// TestNodeVolumeLimits checks kube-scheduler's NodeVolumeLimits rules on
// node "target", whose CSINode lets ebs.csi.aws.com attach two volumes;
// node "bare" has no CSINode.
func TestNodeVolumeLimits(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	st := storage{classes: []*storagev1.StorageClass{
		builder.StorageClass("gp3").WaitForFirstConsumer().Provisioner(ebs).Build(),
		builder.StorageClass("legacy").WaitForFirstConsumer().Provisioner("kubernetes.io/aws-ebs").Build(),
	}}
	for i := 1; i <= 3; i++ {
		pv, claim := fmt.Sprintf("pv-%d", i), fmt.Sprintf("c%d", i)
		st.volumes = append(st.volumes, builder.Volume(pv).Class("gp3").CSI(ebs, fmt.Sprintf("vol-%d", i)).Build())
		st.claims = append(st.claims, builder.VolumeClaim(claim).Class("gp3").BoundTo(pv).Build())
	}
	st.volumes = append(st.volumes, builder.Volume("pv-nfs").CSI("nfs.csi.k8s.io", "share").Build())
	st.claims = append(st.claims, builder.VolumeClaim("nfs").BoundTo("pv-nfs").Build(),
		builder.VolumeClaim("fresh").Class("gp3").Build(), builder.VolumeClaim("old").Class("legacy").Build())
	setup := func(s *snapshot.Snapshot) {
		st.setup(s)
		_ = s.SetCSINode(builder.CSINode("target").Driver(ebs, 2).Driver("nfs.csi.k8s.io", 0).Driver("disk.csi.azure.com", 0).Build())
	}
	on := func(name, node string, claims ...string) *v1.Pod {
		b := builder.Pod(name).OnNode(node)
		for _, c := range claims {
			b.Claim(c)
		}
		return b.Build()
	}
	full := []*v1.Pod{on("q", "target", "c1"), on("r", "target", "c2")}
	// inline mounts in-tree disks, which CSI migration counts as volumes
	// of the driver that took their plugin over.
	inline := func(p *v1.Pod, srcs ...v1.VolumeSource) *v1.Pod {
		for i, src := range srcs {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: fmt.Sprintf("disk-%d", i), VolumeSource: src})
		}
		return p
	}
	awsDisk := func(id string) v1.VolumeSource {
		return v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: id}}
	}
	azureDisk := v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://disks/d"}}
	cases := []struct {
		name    string
		node    string
		running []*v1.Pod
		pod     *v1.Pod
		want    predicates.Predicate
		message string
	}{
		{"a volume under the limit", "target", full[:1], on("p", "", "c2"), predicates.Fits, "fits"},
		{"a volume over the limit", "target", full, on("p", "", "c3"), predicates.NodeVolumeLimits,
			"node has 2 of 2 ebs.csi.aws.com volumes attached and the pod needs 1 more"},
		{"a volume attached already counts once", "target", full, on("p", "", "c1"), predicates.Fits, "fits"},
		{"two pods on one volume count it once", "target", []*v1.Pod{on("q", "target", "c1"), on("r", "target", "c1")},
			on("p", "", "c2"), predicates.Fits, "fits"},
		{"an unbound claim counts under its class's provisioner", "target", full, on("p", "", "fresh"),
			predicates.NodeVolumeLimits, "2 of 2 ebs.csi.aws.com"},
		{"an in-tree provisioner counts under its CSI driver", "target", full, on("p", "", "old"),
			predicates.NodeVolumeLimits, "2 of 2 ebs.csi.aws.com"},
		{"volumes of pods on other nodes do not count", "target", []*v1.Pod{on("q", "bare", "c1"), on("r", "bare", "c2")},
			on("p", "", "c3"), predicates.Fits, "fits"},
		{"a limit of zero", "target", nil, on("p", "", "nfs"), predicates.NodeVolumeLimits,
			"node has 0 of 0 nfs.csi.k8s.io volumes attached and the pod needs 1 more"},
		{"a node without a CSINode has no limit", "bare", []*v1.Pod{on("q", "bare", "c1"), on("r", "bare", "c2")},
			on("p", "", "c3"), predicates.Fits, "fits"},
		{"a pod without claims", "target", full, builder.Pod("p").Build(), predicates.Fits, "fits"},
		{"a placed pod's ephemeral volume whose claim is not made yet", "target",
			[]*v1.Pod{on("q", "target", "c1"), builder.Pod("r").EphemeralVolume("scratch", "gp3").OnNode("target").Build()},
			on("p", "", "c3"), predicates.NodeVolumeLimits, "2 of 2 ebs.csi.aws.com"},
		{"an inline EBS disk counts under ebs.csi.aws.com", "target", full, inline(builder.Pod("p").Build(), awsDisk("vol-9")),
			predicates.NodeVolumeLimits, "2 of 2 ebs.csi.aws.com"},
		{"an inline EBS disk attached already, by its URL", "target",
			[]*v1.Pod{on("q", "target", "c1"), inline(on("r", "target"), awsDisk("vol-9"))},
			inline(builder.Pod("p").Build(), awsDisk("aws://us-east-1a/vol-9")), predicates.Fits, "fits"},
		{"an inline Azure disk counts under its driver", "target", nil, inline(builder.Pod("p").Build(), azureDisk),
			predicates.NodeVolumeLimits, "node has 0 of 0 disk.csi.azure.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster{nodes: []*v1.Node{builder.Node("target").Build(), builder.Node("bare").Build()},
				pods: tc.running, setup: setup}.build(t)
			pc, err := predicates.New(s).Prepare(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			r := pc.Check(s.Node(tc.node))
			if r.Predicate != tc.want {
				t.Fatalf("predicate = %v (%s), want %v", r.Predicate, r, tc.want)
			}
			if !strings.Contains(r.String(), tc.message) {
				t.Errorf("message %q does not contain %q", r.String(), tc.message)
			}
		})
	}
}

// TestNodeVolumeLimitsFollowTheSnapshot: a volume detached (its pod gone)
// frees room for the next Check of the same PodCheck.
func TestNodeVolumeLimitsFollowTheSnapshot(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	st := storage{classes: []*storagev1.StorageClass{builder.StorageClass("gp3").Provisioner(ebs).Build()}}
	for _, c := range []string{"c1", "c2"} {
		st.volumes = append(st.volumes, builder.Volume("pv-"+c).Class("gp3").CSI(ebs, c).Build())
		st.claims = append(st.claims, builder.VolumeClaim(c).Class("gp3").BoundTo("pv-"+c).Build())
	}
	s := cluster{nodes: []*v1.Node{builder.Node("n1").Build()},
		pods: []*v1.Pod{builder.Pod("q").Claim("c1").OnNode("n1").Build()},
		setup: func(s *snapshot.Snapshot) {
			st.setup(s)
			_ = s.SetCSINode(builder.CSINode("n1").Driver(ebs, 1).Build())
		}}.build(t)
	pc, err := predicates.New(s).Prepare(builder.Pod("p").Claim("c2").Build())
	if err != nil {
		t.Fatal(err)
	}
	if r := pc.Check(s.Node("n1")); r.Predicate != predicates.NodeVolumeLimits {
		t.Fatalf("with n1 at its limit: %s", r)
	}
	if err := s.RemovePod("default", "q"); err != nil {
		t.Fatal(err)
	}
	if r := pc.Check(s.Node("n1")); !r.Fits() {
		t.Fatalf("with q gone: %s, want fits", r)
	}
}
