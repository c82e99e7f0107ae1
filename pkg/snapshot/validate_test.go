package snapshot_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// A pod the checks cannot interpret is refused with the field's whole
// path and the value.
func TestInvalidPodsNameTheField(t *testing.T) {
	skew := func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule},
			{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule}}
	}
	for _, tc := range []struct {
		name  string
		spoil func(*v1.Pod)
		want  string
	}{
		{"negative request", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("-1") },
			"spec.containers[0].resources.requests[cpu]: negative quantity -1"},
		{"negative limit in the second container", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "b", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("-1Gi")}}})
		}, "spec.containers[1].resources.limits[memory]: negative quantity -1Gi"},
		{"negative init request", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("-2")}}}}
		}, "spec.initContainers[0].resources.requests[cpu]: negative quantity -2"},
		{"host port", func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 70000}} },
			"spec.containers[0].ports[0].hostPort: 70000 is outside 0-65535"},
		{"toleration", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "a", Operator: v1.TolerationOpExists}, {Key: "b", Operator: "Near"}}
		}, `spec.tolerations[1].operator: unknown operator "Near"`},
		{"spread", skew, "spec.topologySpreadConstraints[1].maxSkew: must be positive, got 0"},
	} {
		p := builder.Pod("p").CPU("1").Build()
		tc.spoil(p)
		_, err := snapshot.NewPodInfo(p)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one ending %q", tc.name, err, tc.want)
		}
	}
}
