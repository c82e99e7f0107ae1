package classes_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/bound/classes"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/trace/tracetest"
)

// TestTracesBound runs both traces with the price expander (Alibaba's
// default pod list 100 times denser) and checks that the per-pod bound is
// at least the fluid one and at most what the run paid, on the same demand.
func TestTracesBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Alibaba and Azure traces")
	}
	for _, c := range []struct {
		name string
		sc   func(testing.TB) *scenario.Scenario
	}{{"alibaba-100x", func(tb testing.TB) *scenario.Scenario { return tracetest.Alibaba(tb, 100, time.Hour) }}, {"azure", tracetest.Azure}} {
		t.Run(c.name, func(t *testing.T) {
			sc := c.sc(t)
			o, err := engine.OptionsFor(sc)
			if err != nil {
				t.Fatal(err)
			}
			o.Autoscaler.ScaleUp.Expander = "price"
			res, err := engine.Run(o)
			if err != nil {
				t.Fatal(err)
			}
			fluid, err := bound.Compute(res.Shapes, res.Demand, res.Duration)
			if err != nil {
				t.Fatal(err)
			}
			in, err := classes.FromRun(sc, res)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			pods, err := bound.ComputePods(in.Shapes, in.Classes, in.Changes, in.End, bound.PodOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cost %.2f, fluid bound %.2f (%.3fx), per-pod bound %.2f (%.3fx) in %v; GPU-hours %.1f / %.1f",
				res.Cost, fluid.Cost, res.Cost/fluid.Cost, pods.Cost, res.Cost/pods.Cost, time.Since(start), pods.GPUHours, fluid.GPUHours)
			if pods.Cost < fluid.Cost-1e-6 || pods.Cost > res.Cost {
				t.Errorf("per-pod bound %.2f outside [fluid bound %.2f, cost %.2f]", pods.Cost, fluid.Cost, res.Cost)
			}
			if d := pods.GPUHours - fluid.GPUHours; d > 1e-6 || d < -1e-6 {
				t.Errorf("GPU-hours %.3f, the fluid bound's %.3f: the demand was not rebuilt the same", pods.GPUHours, fluid.GPUHours)
			}
		})
	}
}

// BenchmarkAlibabaBound times the per-pod bound of the Alibaba default pod
// list, 100 times denser, after one run with the price expander.
func BenchmarkAlibabaBound(b *testing.B) {
	sc := tracetest.Alibaba(b, 100, time.Hour)
	o, err := engine.OptionsFor(sc)
	if err != nil {
		b.Fatal(err)
	}
	o.Autoscaler.ScaleUp.Expander = "price"
	res, err := engine.Run(o)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var r bound.Result
	for i := 0; i < b.N; i++ {
		if r, err = classes.Compute(sc, res); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(r.Cost, "bound-dollars")
	b.ReportMetric(res.Cost/r.Cost, "cost/bound")
}
