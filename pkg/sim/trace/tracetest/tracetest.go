// Package tracetest loads the public traces in ../shared/data (from the
// repository root) for tests and benchmarks, which skip with a message
// when the folder is absent.
package tracetest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/trace"
)

// Open opens a file under ../shared/data, skipping tb when it is absent;
// the file is closed when tb ends.
func Open(tb testing.TB, elem ...string) *os.File {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	// here is pkg/sim/trace/tracetest/tracetest.go in the repository.
	root := filepath.Join(filepath.Dir(here), "..", "..", "..", "..")
	path := filepath.Join(append([]string{root, "..", "shared", "data"}, elem...)...)
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("trace data not available (%v); it is looked for in ../shared/data from the repository root", err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// Alibaba is openb_pod_list_default.csv on node groups made from the
// trace's own 1,523-node list, submissions compressed by timeScale,
// sampled every sample.
func Alibaba(tb testing.TB, timeScale float64, sample time.Duration) *scenario.Scenario {
	tb.Helper()
	nf := Open(tb, "alibaba-gpu-v2023", "openb_node_list_all_node.csv")
	groups, err := trace.AlibabaNodeGroups(nf.Name(), nf, trace.DefaultPrices())
	if err != nil {
		tb.Fatal(err)
	}
	pf := Open(tb, "alibaba-gpu-v2023", "openb_pod_list_default.csv")
	workloads, _, err := trace.AlibabaPods(pf.Name(), pf, trace.AlibabaOptions{TimeScale: timeScale})
	if err != nil {
		tb.Fatal(err)
	}
	s := &scenario.Scenario{Name: "alibaba-default", Seed: 1, NodeGroups: groups, Workloads: workloads,
		SampleInterval: metav1.Duration{Duration: sample}}
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Azure is the built-in LLM serving scenario driven by the Azure trace's
// request rate, run 15 minutes past the trace's end.
func Azure(tb testing.TB) *scenario.Scenario {
	tb.Helper()
	f := Open(tb, "azure-llm-2023", "AzureLLMInferenceTrace_code.csv")
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
