package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// result is a small hand-made run: one group of 2 nodes at $1.5/h for an
// hour, three samples.
func result(label string) *engine.Result {
	return &engine.Result{
		Scenario: "hand", Label: label, Duration: time.Hour, Cost: 3, NodeHours: 2,
		Groups:            []engine.GroupResult{{ID: "cpu", PricePerHour: 1.5, NodeHours: 2, Cost: 3, PeakNodes: 2}},
		GPUHoursAllocated: 1, GPUHoursProvisioned: 4,
		Waits:     []time.Duration{0, time.Minute, 2 * time.Minute, 10 * time.Minute},
		Submitted: 4, ScaleUps: 1, NodesAdded: 2, NodesRemoved: 1, HPAChanges: 3, Loops: 9,
		Series: engine.Series{
			Times: []time.Duration{0, 30 * time.Minute, time.Hour}, Groups: []string{"cpu"},
			Nodes: [][]int{{1}, {2}, {2}}, Pending: []int{3, 0, 0}, GPUsAllocated: []int64{0, 1, 1},
			GPUsProvisioned: []int64{4, 4, 4}, Deployments: []string{"default/web"}, Replicas: [][]int{{1}, {2}, {1}},
			Cost: []float64{0, 0.75, 3},
		},
		Shapes: []bound.Shape{{Name: "cpu", PricePerHour: 1.5, Capacity: bound.Amount{CPU: 4, MemoryGiB: 16}}},
		Demand: []bound.Change{{At: 0, Delta: bound.Amount{CPU: 4}}},
	}
}

func TestSummary(t *testing.T) {
	a, err := NewRun(nil, result("expander=price"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewRun(nil, result("expander=random"))
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{a, b}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	// Demand 4 cpu for an hour on a 4-cpu $1.5 shape: a $1.50 bound, half
	// the $3 spent.
	for _, want := range []string{"expander=price", "expander=random", "cost ($)", "3.00", "lower bound, fluid ($)", "1.50", "2.00x",
		"cpu node-hours / $", "2.0 / 3.00", "1.0 / 4.0 (25%)", "0s / 10m0s / 10m0s", "1 (2)", "HPA replica changes"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

// TestSummaryPerPodBound gives NewRun the scenario: two 3-cpu pods on
// 4-cpu nodes at $1.5/h for an hour. The fluid bound packs 6 cpu onto 1.5
// nodes ($2.25); each pod needs a node of its own, so the per-pod bound is
// two whole nodes ($3.00), what the run paid.
func TestSummaryPerPodBound(t *testing.T) {
	sc := &scenario.Scenario{Name: "hand",
		NodeGroups: []scenario.NodeGroup{{Name: "cpu", MaxSize: 2, PricePerHour: 1.5,
			Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi")}}},
		Workloads: []scenario.Workload{{Name: "web",
			Pod:        scenario.PodTemplate{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}},
			Deployment: &scenario.Deployment{Replicas: 2}}}}
	res := result("")
	res.Demand = []bound.Change{{At: 0, Delta: bound.Amount{CPU: 6}}}
	res.PodDemand = []bound.PodChange{{At: 0, Class: 0, Delta: 2}}
	r, err := NewRun(sc, res)
	if err != nil {
		t.Fatal(err)
	}
	if r.BoundKind != BoundPerPod || math.Abs(r.Bound.Cost-3) > 1e-9 || math.Abs(r.Fluid.Cost-2.25) > 1e-9 {
		t.Errorf("bound %s $%.4f, fluid $%.4f; want per pod $3, fluid $2.25", r.BoundKind, r.Bound.Cost, r.Fluid.Cost)
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`lower bound, per pod \(\$\)\s+3\.00\n`, `cost / lower bound\s+1\.00x\n`, `fluid bound \(\$\)\s+2\.25\n`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := WriteHTML(&out, []Run{r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "lower bound (per pod): $3.00") {
		t.Errorf("HTML does not name the bound")
	}
}

func TestCSV(t *testing.T) {
	var out bytes.Buffer
	if err := WriteCSV(&out, result("")); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"time_s", "nodes_cpu", "pending_pods", "gpus_allocated", "gpus_provisioned", "replicas_default/web", "cost_dollars"},
		{"0", "1", "3", "0", "4", "1", "0.0000"},
		{"1800", "2", "0", "1", "4", "2", "0.7500"},
		{"3600", "2", "0", "1", "4", "1", "3.0000"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
}

func TestHTML(t *testing.T) {
	r, _ := NewRun(nil, result(""))
	var out bytes.Buffer
	if err := WriteHTML(&out, []Run{r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Nodes per group", "Pending pods", "GPUs provisioned and allocated", "Deployment replicas", "Cost so far ($)",
		`<table id="summary">`, "hand cost $3.00, 2.00x the fluid lower bound."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestThin(t *testing.T) {
	if got := thin(3); len(got) != 3 {
		t.Errorf("thin(3) = %v", got)
	}
	got := thin(10 * MaxChartPoints)
	if len(got) != MaxChartPoints || got[0] != 0 || got[len(got)-1] != 10*MaxChartPoints-1 {
		t.Errorf("thin kept %d points from %d to %d", len(got), got[0], got[len(got)-1])
	}
}

// Runs with jobs of several pods show their waits and requests; runs
// without show no gang rows.
func TestSummaryGangRows(t *testing.T) {
	plain, _ := NewRun(nil, result("plain"))
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{plain}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "gang") {
		t.Errorf("a run without gangs shows gang rows:\n%s", out.String())
	}
	res := result("gangs")
	res.Gangs = engine.GangResult{Jobs: 3, NeverStarted: 1, Waits: []time.Duration{time.Minute, 3 * time.Minute, time.Hour},
		Requests: 4, Requeues: 1}
	gangs, _ := NewRun(nil, res)
	out.Reset()
	if err := WriteSummary(&out, []Run{gangs, plain}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gang jobs / never started", "3 / 1", "0 / 0", "3m0s / 1h0m0s / 1h0m0s", "4 (1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
