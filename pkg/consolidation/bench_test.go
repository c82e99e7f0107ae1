package consolidation_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
)

// BenchmarkConsolidation1000Nodes is one pass over the benchmarks' mixed
// cluster at 1,000 nodes: ten groups (16- and 32-core CPU nodes, 4-GPU
// nodes, three zones each, and an empty spot GPU group), 30 ReplicaSet pods
// a node using about 85% of it, every tenth node nearly idle. Consolidation
// is on with no stable time, so every move found is carried out.
//
// "budget-10%" keeps the default budget (10% of each group at once);
// "no-budget" lifts it, so every node is weighed. One planner is reused
// pass after pass, as the loop does.
func BenchmarkConsolidation1000Nodes(b *testing.B) {
	snap, err := benchcluster.Mixed(1000, 30)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		budget bool
	}{{"budget-10%", true}, {"no-budget", false}} {
		b.Run(bc.name, func(b *testing.B) {
			o := consolidation.GPUCostOptions()
			o.StableTime = 0
			if !bc.budget {
				o.Budgets = nil
			}
			planner := newPlanner(b, o)
			in := consolidation.Input{Now: t0, Snapshot: snap}
			p := planner.Plan(in)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p = planner.Plan(in)
			}
			b.StopTimer()
			nodes, evictions := 0, 0
			for _, m := range p.Moves {
				nodes += len(m.Nodes)
				evictions += len(m.Evict)
			}
			b.ReportMetric(float64(nodes), "nodes-moved")
			b.ReportMetric(float64(evictions), "evictions")
		})
	}
}
