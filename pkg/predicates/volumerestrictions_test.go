package predicates_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
)

// TestVolumeRestrictions checks kube-scheduler's VolumeRestrictions rules
// on node "target": a ReadWriteOncePod claim has one user cluster-wide,
// and one node mounts an in-tree disk once (read-only mounts of a GCE PD
// excepted).
func TestVolumeRestrictions(t *testing.T) {
	rwop := builder.VolumeClaim("solo").BoundTo("pv-solo").Build()
	rwop.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	st := storage{volumes: []*v1.PersistentVolume{builder.Volume("pv-solo").Build()}, claims: []*v1.PersistentVolumeClaim{rwop}}
	ebs := func(p *builder.PodBuilder, id string) *builder.PodBuilder {
		pod := p.Build()
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "disk", VolumeSource: v1.VolumeSource{
			AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: id}}})
		return p
	}
	pd := func(p *builder.PodBuilder, readOnly bool) *builder.PodBuilder {
		pod := p.Build()
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "disk", VolumeSource: v1.VolumeSource{
			GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-1", ReadOnly: readOnly}}})
		return p
	}
	cases := []struct {
		name    string
		running []*v1.Pod
		pod     *v1.Pod
		want    predicates.Predicate
		message string
	}{
		{"ReadWriteOncePod claim nobody uses", nil, builder.Pod("p").Claim("solo").Build(), predicates.Fits, "fits"},
		{"ReadWriteOncePod claim used by a pod on another node",
			[]*v1.Pod{builder.Pod("q").Claim("solo").OnNode("other").Build()},
			builder.Pod("p").Claim("solo").Build(), predicates.VolumeRestrictions,
			"PersistentVolumeClaim default/solo is ReadWriteOncePod and pod default/q uses it"},
		{"EBS volume mounted on the node already",
			[]*v1.Pod{ebs(builder.Pod("q").OnNode("target"), "vol-1").Build()},
			ebs(builder.Pod("p"), "vol-1").Build(), predicates.VolumeRestrictions, "volume disk: pod default/q on node mounts the same disk"},
		{"EBS volume mounted on another node", []*v1.Pod{ebs(builder.Pod("q").OnNode("other"), "vol-1").Build()},
			ebs(builder.Pod("p"), "vol-1").Build(), predicates.Fits, "fits"},
		{"another EBS volume on the node", []*v1.Pod{ebs(builder.Pod("q").OnNode("target"), "vol-2").Build()},
			ebs(builder.Pod("p"), "vol-1").Build(), predicates.Fits, "fits"},
		{"GCE PD read-only by both", []*v1.Pod{pd(builder.Pod("q").OnNode("target"), true).Build()},
			pd(builder.Pod("p"), true).Build(), predicates.Fits, "fits"},
		{"GCE PD written by one", []*v1.Pod{pd(builder.Pod("q").OnNode("target"), false).Build()},
			pd(builder.Pod("p"), true).Build(), predicates.VolumeRestrictions, "mounts the same disk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster{nodes: []*v1.Node{builder.Node("target").Build(), builder.Node("other").Build()},
				pods: tc.running, setup: st.setup}.build(t)
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
