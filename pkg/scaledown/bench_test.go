package scaledown_test

import (
	"fmt"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// benchCluster is the Cluster Autoscaler's scale-down benchmark shape: n
// nodes of 100 cpu and 100Gi in one group, each running podsPerNode
// ReplicaSet pods of 1 cpu and 1Gi (1% of the node each).
func benchCluster(b *testing.B, n, podsPerNode int) *snapshot.Snapshot {
	b.Helper()
	s := snapshot.New()
	if err := s.SetNodeGroup(builder.NodeGroup("pool").Min(0).Max(n).Target(n).Build()); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		if err := s.AddNodeInGroup(builder.Node(name).CPU("100").Memory("100Gi").Pods(110).Build(), "pool"); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < podsPerNode; j++ {
			p := builder.Pod(fmt.Sprintf("web-%05d-%02d", i, j)).CPU("1").Memory("1Gi").Label("app", "web").OnNode(name).Build()
			controlledBy(p, "ReplicaSet", "web")
			if err := s.AddPod(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

// BenchmarkScaleDown2000Nodes: 2,000 nodes at 40%, all pods owned by a
// ReplicaSet, unneeded time 0 and no parallelism or candidate limit. The
// pods of 1,200 nodes fill the other 800 exactly, so 1,200 nodes go.
// Upstream Cluster Autoscaler takes 9.07 s and 7.5 GB per loop for this shape
// on 2 cores.
//
// "loop" reuses one Planner across loops, as the autoscaler does, after one
// warm-up loop (its arena of pod copies is then allocated); "first-loop"
// builds a new Planner for every loop.
func BenchmarkScaleDown2000Nodes(b *testing.B) {
	snap := benchCluster(b, 2000, 40)
	opts := scaledown.DefaultOptions()
	opts.UnneededTime = 0
	opts.MaxScaleDownParallelism = 0
	opts.MaxDrainParallelism = 0
	opts.NonEmptyCandidatesCount = 0
	in := scaledown.Input{Now: t0, Snapshot: snap}
	check := func(b *testing.B, p scaledown.Plan) {
		if got := len(p.Delete); got != 1200 {
			b.Fatalf("planned %d removals, want 1200", got)
		}
	}
	b.Run("loop", func(b *testing.B) {
		planner := newPlanner(b, opts)
		check(b, planner.Plan(in))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			check(b, planner.Plan(in))
		}
	})
	b.Run("first-loop", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			check(b, newPlanner(b, opts).Plan(in))
		}
	})
}

// BenchmarkScaleDown800Nodes is the upstream scale-down shape at the node
// count of its DRA benchmark: 800 nodes at 40% (40 pods of 1%), 480 go.
func BenchmarkScaleDown800Nodes(b *testing.B) {
	snap := benchCluster(b, 800, 40)
	runScaleDown(b, snap, 480)
}

// BenchmarkScaleDownDRA800Nodes is the upstream Cluster Autoscaler's DRA
// scale-down shape: 800 nodes, each publishing 10 GPUs of the NVIDIA DRA
// driver, each running 4 ReplicaSet pods that hold one GPU through an
// allocated claim of their own (40% of the devices; each pod 1/20 of the
// node's cpu and memory, so the devices decide): the pods of 480 nodes fill
// the other 320 exactly.
func BenchmarkScaleDownDRA800Nodes(b *testing.B) {
	snap := draBenchCluster(b, 800, 10, 4)
	runScaleDown(b, snap, 480)
}

func runScaleDown(b *testing.B, snap *snapshot.Snapshot, want int) {
	opts := scaledown.DefaultOptions()
	opts.UnneededTime = 0
	opts.MaxScaleDownParallelism = 0
	opts.MaxDrainParallelism = 0
	opts.NonEmptyCandidatesCount = 0
	in := scaledown.Input{Now: t0, Snapshot: snap}
	check := func(b *testing.B, p scaledown.Plan) {
		if got := len(p.Delete); got != want {
			b.Fatalf("planned %d removals, want %d", got, want)
		}
	}
	planner := newPlanner(b, opts)
	check(b, planner.Plan(in))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		check(b, planner.Plan(in))
	}
}

func draBenchCluster(b *testing.B, n, devices, podsPerNode int) *snapshot.Snapshot {
	b.Helper()
	s := snapshot.New()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(s.SetNodeGroup(builder.NodeGroup("pool").Min(0).Max(n).Target(n).Build()))
	must(s.SetDeviceClass(builder.DeviceClass("default-class")))
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		must(s.AddNodeInGroup(builder.Node(name).CPU("100").Memory("100Gi").Pods(110).Build(), "pool"))
		must(s.SetResourceSlice(builder.NodeSlice(name, "gpu.nvidia.com", builder.Devices("gpu-", devices)...)))
		for j := 0; j < podsPerNode; j++ {
			claim := fmt.Sprintf("claim-%05d-%d", i, j)
			p := builder.Pod(fmt.Sprintf("dra-%05d-%d", i, j)).CPU("5").Memory("5Gi").Label("app", "train").ResourceClaim(claim).OnNode(name).Build()
			controlledBy(p, "ReplicaSet", "train")
			must(s.SetResourceClaim(builder.Claim(claim).Request("req-0", "default-class", 1, `device.driver == "gpu.nvidia.com"`).
				Allocated(name, "gpu.nvidia.com", []string{fmt.Sprintf("gpu-%d", j)}, p).Build()))
			must(s.AddPod(p))
		}
	}
	return s
}
