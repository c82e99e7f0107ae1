package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

func servingRun(t *testing.T, label string, p90 float64) Run {
	t.Helper()
	res := result(label)
	res.Series.Serving = []string{"default/llm"}
	res.Series.Waiting = [][]int{{0}, {7}, {1}}
	res.Series.ServingReady = [][]int{{1}, {1}, {2}}
	res.Serving = []engine.ServingResult{{Workload: "default/llm", GPU: "H100", Model: "8B", WorkGPUHours: 0.5,
		Summary: serving.Summary{Requests: 200, Refused: 1, TTFTP50: 0.25, TTFTP90: p90, TTFTP99: math.Inf(1),
			SLO: 2, SLOAttainment: 0.875, GPUHours: 4, IdleGPUHours: 1}}}
	r, err := NewRun(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The page's serving table has a row per run and serving Deployment; a
// page without serving has none.
func TestHTMLServingTable(t *testing.T) {
	var out bytes.Buffer
	if err := WriteHTML(&out, []Run{servingRun(t, "policy=gpu", 1.5), servingRun(t, "policy=queue", 42)}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{`<table id="serving">`, "Requests waiting for a first token", "default/llm (8B on H100)", "0.250s / 42.0s / never", "87.5% within 2.000s", "4.00 (25% idle)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	plain, _ := NewRun(nil, result(""))
	out.Reset()
	if err := WriteHTML(&out, []Run{plain}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `id="serving"`) || strings.Contains(out.String(), "Requests waiting for a first token") {
		t.Error("a serving table or chart without serving")
	}
}

// The summary shows each serving Deployment's TTFT, SLO attainment and
// GPU-hours, run beside run.
func TestSummaryServingRows(t *testing.T) {
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{servingRun(t, "policy=gpu", 1.5), servingRun(t, "policy=queue", 42)}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"default/llm TTFT p50 / p90 / p99", "0.250s / 1.500s / never", "0.250s / 42.0s / never",
		"default/llm within SLO (2.000s)", "87.5% of 200 (1 refused)",
		"default/llm GPU-hours / idle / work", "4.00 / 1.00 (25%) / 0.50",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	// A run without serving shows no serving rows.
	plain, _ := NewRun(nil, result(""))
	out.Reset()
	if err := WriteSummary(&out, []Run{plain}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "TTFT") {
		t.Errorf("serving rows without serving:\n%s", out.String())
	}
}

// The CSV has a waiting and a serving column per serving Deployment.
func TestCSVServingColumns(t *testing.T) {
	res := result("")
	res.Series.Serving = []string{"default/llm"}
	res.Series.Waiting = [][]int{{0}, {7}, {1}}
	res.Series.ServingReady = [][]int{{1}, {1}, {2}}
	var out bytes.Buffer
	if err := WriteCSV(&out, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "replicas_default/web,waiting_requests_default/llm,serving_replicas_default/llm,cost_dollars") ||
		!strings.HasSuffix(lines[2], ",2,7,1,0.7500") {
		t.Errorf("CSV:\n%s", out.String())
	}
}
