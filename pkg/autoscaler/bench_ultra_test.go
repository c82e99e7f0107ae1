package autoscaler_test

import (
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/limits"
)

// ultraNodes is the node count of the ultra-scale benchmarks, from
// GPUSCALE_BENCH_NODES; they are skipped without it, so that `make bench`
// stays short (`make bench-ultra` sets 100000).
func ultraNodes(b *testing.B) int {
	v := os.Getenv("GPUSCALE_BENCH_NODES")
	if v == "" {
		b.Skip("GPUSCALE_BENCH_NODES is not set (make bench-ultra sets it)")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		b.Fatalf("GPUSCALE_BENCH_NODES: want a node count of at least 100, got %q", v)
	}
	return n
}

// ultraGoals: with GPUSCALE_BENCH_GOALS=1 a case that misses its goal at
// 100,000 nodes or more fails the benchmark.
func ultraGoals(nodes int) bool { return nodes >= 100000 && os.Getenv("GPUSCALE_BENCH_GOALS") == "1" }

// ultraOptions are the defaults with the cluster-wide core and memory
// limits lifted: the mixed cluster at 100,000 nodes is past them.
func ultraOptions() autoscaler.Options {
	o := autoscaler.DefaultOptions()
	o.ScaleUp.Expander = "least-waste"
	o.Limits = limits.Limits{Cores: limits.Unbounded, MemoryGiB: limits.Unbounded}
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
	nodes := ultraNodes(b)
	start := time.Now()
	s, err := benchcluster.Mixed(nodes, 10)
	if err == nil {
		err = benchcluster.AddFreshGroups(s, nodes)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes, %d pods built in %v; heap after GC %.0f MiB", nodes, s.PodCount(), time.Since(start).Round(time.Millisecond), heapMiB())
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
			cpu0 := cpuTime()
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
			cpu := cpuTime() - cpu0
			b.StopTimer()
			p99 := percentile(loops, 0.99)
			b.ReportMetric(p99.Seconds(), "p99-s")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(heapMiB(), "heap-MiB")
			st := plan.Status
			nodesUp := 0
			for _, u := range st.ScaleUps {
				nodesUp += u.To - u.From
			}
			b.ReportMetric(float64(nodesUp), "nodes-up")
			b.ReportMetric(float64(st.Cluster.ScaleDown.Candidates), "unneeded")
			b.ReportMetric(float64(removals(plan)), "removals")
			b.Logf("scale-down: %+v", st.Cluster.ScaleDown)
			if ultraGoals(nodes) && p99 > bc.goal {
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

// percentile is the q-quantile of ds (nearest rank).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapMiB is the heap in use after a collection.
func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}
