package engine_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/bound/classes"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/trace/tracetest"
)

// alibabaScenario is the Alibaba trace compressed by timeScale, sampled
// hourly over its recorded 149 days, or every minute when compressed so the
// peak shows.
func alibabaScenario(tb testing.TB, timeScale float64) *scenario.Scenario {
	sample := time.Hour
	if timeScale > 1 {
		sample = time.Minute
	}
	return tracetest.Alibaba(tb, timeScale, sample)
}

// runBench times runs of s; with perPod it also reports the cost against the
// per-pod bound (classes.Compute), computed after the timing.
func runBench(b *testing.B, s *scenario.Scenario, expander string, perPod bool) {
	o, err := engine.OptionsFor(s)
	if err != nil {
		b.Fatal(err)
	}
	if expander != "" {
		o.Autoscaler.ScaleUp.Expander = expander
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	var res *engine.Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = engine.Run(o); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// CPU time beside wall time: on a shared machine it is the steadier figure.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	lb, err := bound.Compute(res.Shapes, res.Demand, res.Duration)
	if err != nil {
		b.Fatal(err)
	}
	var peak int64
	for _, g := range res.Series.GPUsAllocated {
		peak = max(peak, g)
	}
	b.ReportMetric(res.Duration.Hours()/24, "sim-days")
	b.ReportMetric(float64(res.Loops), "loops")
	b.ReportMetric(float64(peak), "peak-GPUs")
	b.ReportMetric(res.Cost, "dollars")
	b.ReportMetric(res.Cost/lb.Cost, "cost/bound")
	if perPod {
		pb, err := classes.Compute(s, res)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Cost/pb.Cost, "cost/per-pod-bound")
	}
	b.ReportMetric(res.WaitPercentile(50).Seconds(), "wait-p50-s")
	b.ReportMetric(res.WaitPercentile(90).Seconds(), "wait-p90-s")
	b.ReportMetric(res.WaitPercentile(99).Seconds(), "wait-p99-s")
	b.ReportMetric(float64(res.Unscheduled), "unscheduled")
}

// BenchmarkAlibabaDefault replays the 8,152 pods of
// openb_pod_list_default.csv (149 days of timestamps, 35 of them dense) on
// the trace's 1,523-node cluster, as recorded and with submissions 1,000
// and 10,000 times denser (submissions within 3.6 hours and 21 minutes).
func BenchmarkAlibabaDefault(b *testing.B) {
	for _, bc := range []struct {
		name  string
		scale float64
	}{{"timestamps", 1}, {"compressed-1000x", 1000}, {"compressed-10000x", 10000}} {
		b.Run(bc.name, func(b *testing.B) { runBench(b, alibabaScenario(b, bc.scale), "", false) })
	}
}

// BenchmarkSyntheticDay is a day of the 1,000-node, 30,000-pod cluster of
// the built-in synthetic-day scenario, with 28 HPAs.
func BenchmarkSyntheticDay(b *testing.B) {
	s, err := scenario.Builtin(scenario.SyntheticDayName)
	if err != nil {
		b.Fatal(err)
	}
	runBench(b, s, "", false)
}

// BenchmarkExpanders compares the expanders on both traces: cost against
// the lower bound and pending waits.
func BenchmarkExpanders(b *testing.B) {
	for _, expander := range []string{"random", "most-pods", "least-waste", "least-nodes", "price"} {
		b.Run("alibaba-100x/"+expander, func(b *testing.B) { runBench(b, alibabaScenario(b, 100), expander, true) })
		b.Run("azure/"+expander, func(b *testing.B) { runBench(b, tracetest.Azure(b), expander, true) })
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
