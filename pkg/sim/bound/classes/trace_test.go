package classes_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/bound/classes"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/trace"
)

// dataDir is ../shared/data from the repository root.
func dataDir(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("trace data not found (%v); it is looked for in ../shared/data from the repository root", err)
	}
	return dir
}

func open(tb testing.TB, path string) *os.File {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

func alibaba(tb testing.TB, timeScale float64) *scenario.Scenario {
	tb.Helper()
	dir := filepath.Join(dataDir(tb), "alibaba-gpu-v2023")
	nf := open(tb, filepath.Join(dir, "openb_node_list_all_node.csv"))
	groups, err := trace.AlibabaNodeGroups(nf.Name(), nf, trace.DefaultPrices())
	if err != nil {
		tb.Fatal(err)
	}
	pf := open(tb, filepath.Join(dir, "openb_pod_list_default.csv"))
	workloads, _, err := trace.AlibabaPods(pf.Name(), pf, trace.AlibabaOptions{TimeScale: timeScale})
	if err != nil {
		tb.Fatal(err)
	}
	s := &scenario.Scenario{Name: "alibaba-default", Seed: 1, NodeGroups: groups, Workloads: workloads,
		SampleInterval: metav1.Duration{Duration: time.Hour}}
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		tb.Fatal(err)
	}
	return s
}

func azure(tb testing.TB) *scenario.Scenario {
	tb.Helper()
	f := open(tb, filepath.Join(dataDir(tb), "azure-llm-2023", "AzureLLMInferenceTrace_code.csv"))
	points, err := trace.AzureLoad(f.Name(), f, trace.AzureOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := scenario.Builtin("azure-llm-serving")
	if err != nil {
		tb.Fatal(err)
	}
	s.Workloads[0].Deployment.Load.Points = points
	if last := points[len(points)-1].At.Duration; s.Duration.Duration < last {
		s.Duration = metav1.Duration{Duration: last + 15*time.Minute}
	}
	return s
}

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
	}{{"alibaba-100x", func(tb testing.TB) *scenario.Scenario { return alibaba(tb, 100) }}, {"azure", azure}} {
		t.Run(c.name, func(t *testing.T) {
			sc := c.sc(t)
			o := engine.OptionsFor(sc)
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
	sc := alibaba(b, 100)
	o := engine.OptionsFor(sc)
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
