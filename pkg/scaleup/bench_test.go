package scaleup_test

import (
	"fmt"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// BenchmarkScaleUp50kPods is the upstream Cluster Autoscaler's scale-up
// benchmark shape: 50,000 pending pods created one by one without a
// controller, each 1/50 of a node's cpu and memory, one empty group: a plan
// of 1,000 nodes.
func BenchmarkScaleUp50kPods(b *testing.B) {
	s := emptyGroup(b)
	pods := make([]*v1.Pod, 50000)
	for i := range pods {
		pods[i] = builder.Pod(fmt.Sprintf("p-%05d", i)).CPU("1").Memory("1Gi").Build()
	}
	runScaleUp(b, s, pods, 1000)
}

// BenchmarkScaleUp50kDistinctPods is the same with every pod distinct (its
// own label), so no two pods share an equivalence class: the worst case.
func BenchmarkScaleUp50kDistinctPods(b *testing.B) {
	s := emptyGroup(b)
	pods := make([]*v1.Pod, 50000)
	for i := range pods {
		pods[i] = builder.Pod(fmt.Sprintf("p-%05d", i)).CPU("1").Memory("1Gi").Label("id", fmt.Sprint(i)).Build()
	}
	runScaleUp(b, s, pods, 1000)
}

// emptyGroup is a cluster of one empty group of 50-cpu, 50Gi nodes.
func emptyGroup(b *testing.B) *snapshot.Snapshot {
	s := snapshot.New()
	g := builder.NodeGroup("ng").Max(2000).Template(builder.Node("t").CPU("50").Memory("50Gi").Pods(110).Build()).Build()
	if err := s.SetNodeGroup(g); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkScaleUpMixed5000Nodes: 5,000 nodes, 150,000 running pods, ten
// groups in three zones, 1,000 pending pods of which 5% carry hostname
// anti-affinity or zone spread.
func BenchmarkScaleUpMixed5000Nodes(b *testing.B) {
	s, err := benchcluster.Mixed(5000, 30)
	if err != nil {
		b.Fatal(err)
	}
	runScaleUp(b, s, benchcluster.Pending(1000), -1)
}

func runScaleUp(b *testing.B, s *snapshot.Snapshot, pods []*v1.Pod, wantNodes int) {
	o := scaleup.DefaultOptions()
	o.Expander = "least-waste"
	p, err := scaleup.NewPlanner(o)
	if err != nil {
		b.Fatal(err)
	}
	state := clusterstate.New(clusterstate.DefaultOptions())
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	var plan scaleup.Plan
	for i := 0; i < b.N; i++ {
		plan, err = p.Plan(scaleup.Input{Now: t0, Snapshot: s, Pending: pods, State: state})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
	nodes := 0
	for _, su := range plan.ScaleUps {
		nodes += su.Delta
	}
	b.ReportMetric(float64(nodes), "nodes")
	if wantNodes >= 0 && nodes != wantNodes {
		b.Fatalf("planned %d nodes, want %d", nodes, wantNodes)
	}
}

// BenchmarkScaleUp500Nodes is the upstream scale-up shape at the node count
// of its DRA benchmark: 25,000 pending pods of 1/50 of a node, without a
// controller, onto one empty group: 500 nodes.
func BenchmarkScaleUp500Nodes(b *testing.B) {
	s := emptyGroup(b)
	pods := make([]*v1.Pod, 25000)
	for i := range pods {
		pods[i] = builder.Pod(fmt.Sprintf("p-%05d", i)).CPU("1").Memory("1Gi").Build()
	}
	runScaleUp(b, s, pods, 500)
}

// BenchmarkScaleUpDRA500Nodes is the upstream Cluster Autoscaler's DRA
// scale-up shape: a group whose template publishes 8 GPUs of the NVIDIA DRA
// driver in one ResourceSlice, 4,000 pending pods without a controller,
// each with a ResourceClaim of its own for one device (a CEL selector on
// the driver), each asking for 1/16 of the node's cpu and memory so the
// devices decide: 500 nodes. "device-plugin" is the same with
// nvidia.com/gpu instead of claims.
func BenchmarkScaleUpDRA500Nodes(b *testing.B) {
	b.Run("dra", func(b *testing.B) {
		s, pods := draScaleUpCluster(b, 4000)
		runScaleUp(b, s, pods, 500)
	})
	b.Run("device-plugin", func(b *testing.B) {
		s := snapshot.New()
		g := builder.NodeGroup("ng").Max(2000).Template(builder.Node("t").CPU("16").Memory("16Gi").Pods(110).GPU(8).Build()).Build()
		if err := s.SetNodeGroup(g); err != nil {
			b.Fatal(err)
		}
		pods := make([]*v1.Pod, 4000)
		for i := range pods {
			pods[i] = builder.Pod(fmt.Sprintf("p-%05d", i)).CPU("1").Memory("1Gi").GPU(1).Build()
		}
		runScaleUp(b, s, pods, 500)
	})
}

func draScaleUpCluster(b *testing.B, n int) (*snapshot.Snapshot, []*v1.Pod) {
	s := snapshot.New()
	g := builder.NodeGroup("ng").Max(2000).Template(builder.Node("template-ng").CPU("16").Memory("16Gi").Pods(110).Build()).
		TemplateSlices(builder.NodeSlice("template-ng", "gpu.nvidia.com", builder.Devices("gpu-", 8)...)).Build()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(s.SetNodeGroup(g))
	must(s.SetDeviceClass(builder.DeviceClass("default-class")))
	pods := make([]*v1.Pod, n)
	for i := range pods {
		claim := fmt.Sprintf("claim-%d", i)
		must(s.SetResourceClaim(builder.Claim(claim).Request("req-0", "default-class", 1, `device.driver == "gpu.nvidia.com"`).Build()))
		pods[i] = builder.Pod(fmt.Sprintf("pod-dra-%d", i)).CPU("1").Memory("1Gi").ResourceClaim(claim).Build()
	}
	return s, pods
}
