package predicates_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// mixedCluster builds n nodes in 3 zones: a third GPU nodes tainted for
// GPUs, ten pods per node, some with anti-affinity and spread labels.
func mixedCluster(b *testing.B, n int) *snapshot.Snapshot {
	s := snapshot.New()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		nb := builder.Node(name).Zone(fmt.Sprintf("zone-%d", i%3)).CPU("32").Memory("128Gi")
		if i%3 == 0 {
			nb.GPU(8).Label("accelerator", "a100").Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule)
		}
		if err := s.AddNode(nb.Build()); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			pb := builder.Pod(fmt.Sprintf("p-%05d-%d", i, j)).CPU("1").Memory("2Gi").
				Label("app", fmt.Sprintf("app-%d", j)).OnNode(name)
			if j == 0 && i%50 == 0 {
				pb.AntiAffinity(v1.LabelHostname, "app", "singleton")
			}
			if err := s.AddPod(pb.Build()); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

// BenchmarkCheckResourceFit: one plain pod against one node.
func BenchmarkCheckResourceFit(b *testing.B) {
	s := snapshot.New()
	_ = s.AddNode(builder.Node("n").CPU("32").GPU(8).Build())
	_ = s.AddPod(builder.Pod("q").CPU("4").GPU(2).OnNode("n").Build())
	pc, err := predicates.New(s).Prepare(builder.Pod("p").CPU("2").Memory("4Gi").GPU(1).Build())
	if err != nil {
		b.Fatal(err)
	}
	ni := s.Node("n")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !pc.Check(ni).Fits() {
			b.Fatal("pod should fit")
		}
	}
}

// BenchmarkCheck5000Nodes: prepare one pod and check it against every node
// of a 5,000-node, 50,000-pod mixed cluster.
func BenchmarkCheck5000Nodes(b *testing.B) {
	s := mixedCluster(b, 5000)
	pods := map[string]*v1.Pod{
		"plain":        builder.Pod("plain").CPU("2").Memory("4Gi").Build(),
		"gpu-tolerant": builder.Pod("gpu").CPU("4").GPU(1).Toleration("nvidia.com/gpu").NodeSelector("accelerator", "a100").Build(),
		"anti-affinity": builder.Pod("anti").CPU("1").Label("app", "app-3").
			AntiAffinity(v1.LabelHostname, "app", "app-3").Build(),
		"spread": builder.Pod("spread").CPU("1").Label("app", "app-1").Spread(v1.LabelTopologyZone, 1, "app", "app-1").Build(),
	}
	for _, name := range []string{"plain", "gpu-tolerant", "anti-affinity", "spread"} {
		pod := pods[name]
		b.Run(name, func(b *testing.B) {
			c := predicates.New(s)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				pc, err := c.Prepare(pod)
				if err != nil {
					b.Fatal(err)
				}
				for _, ni := range s.Nodes() {
					pc.Check(ni)
				}
			}
		})
	}
}
