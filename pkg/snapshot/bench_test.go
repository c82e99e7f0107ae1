package snapshot_test

import (
	"fmt"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// BenchmarkForkRevert: on a 5,000-node, 50,000-pod snapshot, fork, add a
// node with ten pods and revert.
func BenchmarkForkRevert(b *testing.B) {
	s := snapshot.New()
	for i := 0; i < 5000; i++ {
		name := fmt.Sprintf("node-%05d", i)
		if err := s.AddNode(builder.Node(name).Zone(fmt.Sprintf("z%d", i%3)).Build()); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			if err := s.AddPod(builder.Pod(fmt.Sprintf("p-%05d-%d", i, j)).CPU("100m").Label("app", "x").OnNode(name).Build()); err != nil {
				b.Fatal(err)
			}
		}
	}
	node := builder.Node("new-node").Zone("z0").Build()
	var pods []*snapshot.PodInfo
	for j := 0; j < 10; j++ {
		pi, err := snapshot.NewPodInfo(builder.Pod(fmt.Sprintf("new-%d", j)).CPU("100m").Label("app", "x").Build())
		if err != nil {
			b.Fatal(err)
		}
		pods = append(pods, pi)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Fork()
		if err := s.AddNode(node); err != nil {
			b.Fatal(err)
		}
		for _, pi := range pods {
			if err := s.AddPodInfo(pi, "new-node"); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Revert(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForkRevertEmpty measures the bare cost of a fork and revert.
func BenchmarkForkRevertEmpty(b *testing.B) {
	s := snapshot.New()
	_ = s.AddNode(builder.Node("n").Build())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Fork()
		_ = s.Revert()
	}
}

// BenchmarkNewPodInfo: the view of one bound GPU pod, as a new
// autoscaler builds it for every pod of the cluster in its first loop.
func BenchmarkNewPodInfo(b *testing.B) {
	p := builder.Pod("p").Namespace("team-1").CPU("4").Memory("16Gi").GPU(1).Toleration("nvidia.com/gpu").
		Label("app", "train").OnNode("n1").Build()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snapshot.NewPodInfo(p); err != nil {
			b.Fatal(err)
		}
	}
}
