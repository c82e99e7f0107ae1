package scaledown_test

import (
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestNodeUtilization(t *testing.T) {
	ds := func(cpu string) *v1.Pod {
		return controlledBy(builder.Pod("ds-"+cpu).CPU(cpu).Build(), "DaemonSet", "agent")
	}
	mirror := func(cpu string) *v1.Pod {
		p := builder.Pod("mirror-" + cpu).CPU(cpu).Build()
		p.Annotations = map[string]string{drain.AnnotationMirrorPod: "x"}
		return p
	}
	terminating := func(name, cpu string, ago time.Duration) *v1.Pod {
		p := rs(name, cpu)
		ts := metav1.NewTime(t0.Add(-ago))
		p.DeletionTimestamp = &ts
		return p
	}
	prio := int32(-50)
	expendable := builder.Pod("filler").CPU("2").Build()
	expendable.Spec.Priority = &prio

	cases := []struct {
		name     string
		node     *v1.Node
		pods     []*v1.Pod
		opts     func(*scaledown.Options)
		resource v1.ResourceName
		value    float64
		gpuNode  bool
	}{
		{name: "cpu is judged when it is the larger share", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1")}, resource: v1.ResourceCPU, value: 0.25},
		{name: "memory is judged when it is the larger share", node: node4("n").Build(),
			pods:     []*v1.Pod{controlledBy(builder.Pod("m").CPU("100m").Memory("8Gi").Build(), "ReplicaSet", "m")},
			resource: v1.ResourceMemory, value: 0.5},
		{name: "empty node reads zero", node: node4("n").Build(), resource: v1.ResourceMemory, value: 0},
		{name: "DaemonSet pods count by default", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), ds("1")}, resource: v1.ResourceCPU, value: 0.5},
		{name: "DaemonSet pods leave requests and allocatable when ignored", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), ds("1")}, opts: func(o *scaledown.Options) { o.IgnoreDaemonSetsUtilization = true },
			resource: v1.ResourceCPU, value: 1.0 / 3},
		{name: "mirror pods count by default", node: node4("n").Build(),
			pods: []*v1.Pod{mirror("2")}, resource: v1.ResourceCPU, value: 0.5},
		{name: "mirror pods leave requests and allocatable when ignored", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), mirror("2")}, opts: func(o *scaledown.Options) { o.IgnoreMirrorPodsUtilization = true },
			resource: v1.ResourceCPU, value: 0.5},
		{name: "pods terminating past their grace period do not count", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), terminating("old", "2", time.Hour)}, resource: v1.ResourceCPU, value: 0.25},
		{name: "pods still within their grace period count", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), terminating("new", "2", 10*time.Second)}, resource: v1.ResourceCPU, value: 0.75},
		{name: "expendable pods do not count", node: node4("n").Build(),
			pods: []*v1.Pod{rs("a", "1"), expendable}, resource: v1.ResourceCPU, value: 0.25},
		{name: "GPU node is judged by GPUs alone", node: node4("n").GPU(4).Build(),
			pods:     []*v1.Pod{controlledBy(builder.Pod("g").CPU("4").GPU(1).Build(), "Job", "g")},
			resource: gpu.ResourceName, value: 0.25, gpuNode: true},
		{name: "GPU node with busy cpu and idle GPUs reads zero", node: node4("n").GPU(4).Build(),
			pods: []*v1.Pod{rs("a", "4")}, resource: gpu.ResourceName, value: 0, gpuNode: true},
		{name: "MIG node is judged by the share of the GPU its slices take", node: node4("n").
			Allocatable("nvidia.com/mig-3g.20gb", "1").Allocatable("nvidia.com/mig-2g.10gb", "1").Allocatable("nvidia.com/mig-1g.5gb", "2").Build(),
			pods:     []*v1.Pod{controlledBy(builder.Pod("g").CPU("1").Request("nvidia.com/mig-1g.5gb", "1").Build(), "Job", "g")},
			resource: "nvidia.com/mig-1g.5gb", value: 1.0 / 7, gpuNode: true},
		{name: "AMD GPU node is judged by its GPUs", node: node4("n").Allocatable("amd.com/gpu", "8").Build(),
			pods:     []*v1.Pod{controlledBy(builder.Pod("g").CPU("4").Request("amd.com/gpu", "2").Build(), "Job", "g")},
			resource: "amd.com/gpu", value: 0.25, gpuNode: true},
		{name: "Neuron node counts cores as shares of devices", node: node4("n").
			Allocatable("aws.amazon.com/neuron", "1").Allocatable("aws.amazon.com/neuroncore", "2").Build(),
			pods:     []*v1.Pod{controlledBy(builder.Pod("g").CPU("1").Request("aws.amazon.com/neuroncore", "1").Build(), "Job", "g")},
			resource: "aws.amazon.com/neuron", value: 0.5, gpuNode: true},
		{name: "TPU node with busy cpu and idle chips reads zero", node: node4("n").Allocatable("google.com/tpu", "4").Build(),
			pods: []*v1.Pod{rs("a", "4")}, resource: "google.com/tpu", value: 0, gpuNode: true},
		{name: "GPU node without advertised GPUs reads zero", node: node4("n").Label(gpu.LabelGPUPresent, "true").Build(),
			pods: []*v1.Pod{rs("a", "3")}, resource: gpu.ResourceName, value: 0, gpuNode: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t).node(tc.node, "", tc.pods...)
			o := scaledown.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			u := scaledown.NodeUtilization(c.snap, c.snap.Node("n"), &o, t0)
			if u.Resource != tc.resource || math.Abs(u.Value-tc.value) > 1e-9 || u.GPUNode != tc.gpuNode {
				t.Errorf("utilization %+v, want %s at %.4f (GPU node %v)", u, tc.resource, tc.value, tc.gpuNode)
			}
		})
	}
}
