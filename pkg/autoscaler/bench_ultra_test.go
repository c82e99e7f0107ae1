package autoscaler_test

import (
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/internal/benchmeasure"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/limits"
)

// ultraOptions are the defaults with the cluster-wide core and memory
// limits lifted: the mixed cluster at 100,000 nodes is past them.
func ultraOptions() autoscaler.Options {
	o := autoscaler.DefaultOptions()
	o.ScaleUp.Expander = "least-waste"
	o.Limits = limits.Limits{Cores: limits.Unbounded(), MemoryGiB: limits.Unbounded()}
	return o
}

// BenchmarkUltraStep runs Step on the mixed cluster at GPUSCALE_BENCH_NODES
// nodes with 10 ReplicaSet pods each (a tenth of the nodes nearly idle),
// plus three empty groups (one per shape) whose nodes pods select by
// benchcluster.FreshLabel:
//   - fits-existing: benchcluster.Pending(1000), which the nearly idle
//     nodes hold; no scale-up, so the scale-down pass runs too;
//   - needs-nodes: the same pods selecting the empty groups;
//   - burst-10k: 10,000 pods of a tenth of a node selecting the empty
//     groups (about 1,000 new nodes);
//   - scale-down: no pending pods, unneeded time 0 and no limit on
//     candidates or parallelism, so the pass weighs every node;
//   - first-loop: fits-existing with a new autoscaler each loop.
//
// Each reports the p99 wall time of its loops (p99-s), the CPU time of the
// process per loop (cpu-s/op: garbage collection included) and the heap
// after a collection at the end.
func BenchmarkUltraStep(b *testing.B) {
	nodes := benchmeasure.Nodes(b)
	start := time.Now()
	s, err := benchcluster.Mixed(nodes, 10)
	if err == nil {
		err = benchcluster.AddFreshGroups(s, nodes)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes, %d pods built in %v; heap after GC %.0f MiB", nodes, s.PodCount(), time.Since(start).Round(time.Millisecond), benchmeasure.HeapMiB())
	scaleDownAll := func(o *autoscaler.Options) {
		d := &o.ScaleDown
		d.UnneededTime, d.MaxScaleDownParallelism, d.MaxDrainParallelism, d.NonEmptyCandidatesCount, d.MaxBulkSoftTaintCount = 0, 0, 0, 0, 0
	}
	for _, bc := range []struct {
		name    string
		pending []*v1.Pod
		tune    func(*autoscaler.Options)
		fresh   bool
		goal    time.Duration
	}{
		{name: "fits-existing", pending: benchcluster.Pending(1000), goal: time.Second},
		{name: "needs-nodes", pending: benchcluster.Fresh(benchcluster.Pending(1000)), goal: time.Second},
		{name: "burst-10k", pending: benchcluster.Fresh(benchcluster.Burst(10000)), goal: 2 * time.Second},
		{name: "scale-down", tune: scaleDownAll, goal: 2 * time.Second},
		{name: "first-loop", pending: benchcluster.Pending(1000), fresh: true, goal: 5 * time.Second},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := ultraOptions()
			if bc.tune != nil {
				bc.tune(&o)
			}
			newAutoscaler := func() *autoscaler.Autoscaler {
				a, err := autoscaler.New(o)
				if err != nil {
					b.Fatal(err)
				}
				return a
			}
			a := newAutoscaler()
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var plan autoscaler.Plan
			loops := make([]time.Duration, 0, b.N)
			var outcomes []autoscaler.Outcome
			cpu0 := benchmeasure.CPUTime()
			for i := 0; i < b.N; i++ {
				if bc.fresh {
					a = newAutoscaler()
				}
				t := time.Now()
				if plan, err = a.Step(autoscaler.Input{Now: t0, Snapshot: s, Pending: bc.pending, Outcomes: outcomes}); err != nil {
					b.Fatal(err)
				}
				loops = append(loops, time.Since(t))
				outcomes = calledOff(plan)
			}
			cpu := benchmeasure.CPUTime() - cpu0
			b.StopTimer()
			p99 := benchmeasure.Percentile(loops, 0.99)
			b.ReportMetric(p99.Seconds(), "p99-s")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(benchmeasure.HeapMiB(), "heap-MiB")
			st := plan.Status
			nodesUp := 0
			for _, u := range st.ScaleUps {
				nodesUp += u.To - u.From
			}
			b.ReportMetric(float64(nodesUp), "nodes-up")
			b.ReportMetric(float64(st.Cluster.ScaleDown.Candidates), "unneeded")
			b.ReportMetric(float64(removals(plan)), "removals")
			if benchmeasure.Goals(nodes) && p99 > bc.goal {
				b.Errorf("p99 %v is past the goal of %v at %d nodes", p99, bc.goal, nodes)
			}
		})
	}
	runtime.KeepAlive(s)
}

// calledOff calls the plan's removals off, as a node whose pods changed
// would, so that the next loop weighs the same nodes again.
func calledOff(p autoscaler.Plan) []autoscaler.Outcome {
	var out []autoscaler.Outcome
	for _, a := range p.Actions {
		if r, ok := a.(autoscaler.RemoveNodes); ok {
			for _, rm := range r.Removals {
				out = append(out, autoscaler.RemovalAborted{Node: rm.Node, Group: rm.Group, At: t0, Reason: "benchmark"})
			}
		}
	}
	return out
}

// removals counts the nodes a plan removes.
func removals(p autoscaler.Plan) int {
	n := 0
	for _, a := range p.Actions {
		if r, ok := a.(autoscaler.RemoveNodes); ok {
			n += len(r.Removals)
		}
	}
	return n
}
