package report

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// comparedRuns are three hand-made runs: b is the cheapest but leaves a pod
// pending; c is the cheapest of those that leave none.
func comparedRuns(t *testing.T) []Run {
	t.Helper()
	var runs []Run
	for _, x := range []struct {
		label   string
		cost    float64
		pending int
	}{{"expander=random", 3, 0}, {"expander=price", 2, 1}, {"expander=least-waste", 2.5, 0}} {
		res := result(x.label)
		res.Cost, res.Unscheduled = x.cost, x.pending
		r, err := NewRun(nil, res)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

// chartOptions decodes the echarts option of every chart of a page.
func chartOptions(t *testing.T, p *page) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range p.Charts {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.Option), &m); err != nil {
			t.Fatalf("chart %s: option is not JSON: %v", c.Title, err)
		}
		out = append(out, m)
	}
	return out
}

// TestHTMLIsSelfContained: the page loads nothing: no script, style sheet
// or image from elsewhere, the chart library inline.
func TestHTMLIsSelfContained(t *testing.T) {
	var out bytes.Buffer
	if err := WriteHTML(&out, comparedRuns(t)); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	if !strings.Contains(html, echartsJS) {
		t.Fatalf("the page does not hold the chart library inline")
	}
	// The page around the library (whose code builds elements of its own).
	html = strings.Replace(html, echartsJS, "", 1)
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*\b(src|href)\s*=`).FindString(html); m != "" {
		t.Errorf("the page loads a resource: %s", m)
	}
	if !strings.Contains(echartsJS, `version="`+EChartsVersion+`"`) {
		t.Errorf("the embedded library is not ECharts %s", EChartsVersion)
	}
	// The library goes in as the text of a script element: it must not
	// hold what would end that element.
	if strings.Contains(strings.ToLower(echartsJS), "</script") {
		t.Error("the embedded chart library holds </script")
	}
}

func TestHTMLSummaryNamesTheCheapest(t *testing.T) {
	p, err := newPage(comparedRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "Cheapest run: expander=price at $2.00 (1.33x the fluid lower bound). It left 1 pods pending at the end; " +
		"expander=least-waste left 0 at $2.50."
	if p.Verdict != want {
		t.Errorf("verdict %q, want %q", p.Verdict, want)
	}
	for i, row := range p.Rows {
		if row.Cheapest != (i == 1) {
			t.Errorf("row %s marked cheapest %v", row.Name, row.Cheapest)
		}
		if string(row.Color) != RunColor(i) {
			t.Errorf("row %s colour %s, want %s", row.Name, row.Color, RunColor(i))
		}
	}
	r := p.Rows[1]
	got := []string{r.Cost, r.Bound, r.Ratio, r.NodeHours, r.GPUUse, r.Waits, r.Pending, r.Changes}
	wantRow := []string{"$2.00", "$1.50", "1.33x", "2.0", "25% of 4.0 GPU-hours", "1m0s / 10m0s / 10m0s", "1 of 4", "+2 / -1"}
	if strings.Join(got, "|") != strings.Join(wantRow, "|") {
		t.Errorf("row %s: %q, want %q", r.Name, got, wantRow)
	}

	// Without a cheaper run that leaves fewer pods, the verdict stops at
	// the cheapest.
	runs := comparedRuns(t)[:2]
	runs[1].Result.Unscheduled = 0
	if p, _ := newPage(runs); strings.Contains(p.Verdict, "pending") {
		t.Errorf("verdict %q speaks of pending pods", p.Verdict)
	}
}

// TestHTMLRunColoursAreStable: in compare mode every series of a run, in
// every chart, has the run's colour, the one its summary row shows.
func TestHTMLRunColoursAreStable(t *testing.T) {
	runs := comparedRuns(t)
	p, err := newPage(runs)
	if err != nil {
		t.Fatal(err)
	}
	opts := chartOptions(t, p)
	if len(opts) != 5 {
		t.Fatalf("%d charts, want 5", len(opts))
	}
	for i, opt := range opts {
		series := opt["series"].([]any)
		if len(series) < len(runs) {
			t.Errorf("chart %s: %d series for %d runs", p.Charts[i].Title, len(series), len(runs))
		}
		for _, s := range series {
			s := s.(map[string]any)
			name := s["name"].(string)
			run := -1
			for k, r := range runs {
				if name == r.Name() || strings.HasPrefix(name, r.Name()+" ") {
					run = k
				}
			}
			if run < 0 {
				t.Errorf("chart %s: series %q names no run", p.Charts[i].Title, name)
				continue
			}
			line, _ := s["lineStyle"].(map[string]any)
			if s["color"] != RunColor(run) || line["color"] != RunColor(run) {
				t.Errorf("chart %s: series %q colour %v (line %v), want run %d's %s", p.Charts[i].Title, name, s["color"], line["color"], run, RunColor(run))
			}
			// Runs drawn first draw wider, so lines drawn over them
			// leave their edges showing.
			if want := 2 + 1.5*float64(len(runs)-1-run); line["width"] != want {
				t.Errorf("chart %s: series %q width %v, want %v", p.Charts[i].Title, name, line["width"], want)
			}
		}
	}
}

// TestHTMLLayoutKeepsLegendOffThePlot: the legend sits above the plot
// area and the zoom slider below it, in every chart.
func TestHTMLLayoutKeepsLegendOffThePlot(t *testing.T) {
	p, err := newPage(comparedRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, opt := range chartOptions(t, p) {
		legend := opt["legend"].(map[string]any)
		grid := opt["grid"].([]any)[0].(map[string]any)
		if legend["top"] != "0" || legend["type"] != "scroll" || grid["top"] != "44" || grid["bottom"] != "64" {
			t.Errorf("chart %s: legend %v, grid %v; want a scrolling legend on top, the plot 44px below the top and 64px above the bottom",
				p.Charts[i].Title, legend, grid)
		}
	}
}

// activeRun makes a hand-made run of n samples a minute apart whose nodes
// change at the given samples only.
func activeRun(t *testing.T, n int, changes ...int) Run {
	t.Helper()
	res := result("")
	s := engine.Series{Groups: []string{"cpu"}}
	nodes := 1
	for k := range n {
		for _, c := range changes {
			if c == k {
				nodes++
			}
		}
		s.Times = append(s.Times, time.Duration(k)*time.Minute)
		s.Nodes = append(s.Nodes, []int{nodes})
		s.Pending = append(s.Pending, 0)
		s.GPUsAllocated = append(s.GPUsAllocated, 0)
		s.GPUsProvisioned = append(s.GPUsProvisioned, 0)
		s.Replicas = append(s.Replicas, nil)
		s.Cost = append(s.Cost, float64(k))
	}
	res.Series = s
	r, err := NewRun(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHTMLZoomsOnActivity: a run that changes only between minutes 40 and
// 50 of 100 opens on that span, padded; one that changes throughout opens
// whole.
func TestHTMLZoomsOnActivity(t *testing.T) {
	cases := []struct {
		name       string
		runs       []Run
		start, end float64
	}{
		// Changes at samples 40 and 50: the span is minutes 39 to 50 of
		// 100 (99 minutes long), padded by 2% each side.
		{"middle", []Run{activeRun(t, 100, 40, 50)}, 39.0/99*100 - 2, 50.0/99*100 + 2},
		{"throughout", []Run{activeRun(t, 100, 5, 95)}, 0, 100},
		{"nothing changes", []Run{activeRun(t, 100)}, 0, 100},
		// Compared runs share one window covering both: minutes 39 to
		// 60, padded by a tenth of that.
		{"two runs", []Run{activeRun(t, 100, 40), activeRun(t, 100, 60)}, (39.0 - 2.1) / 99 * 100, (60.0 + 2.1) / 99 * 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := newPage(c.runs)
			if err != nil {
				t.Fatal(err)
			}
			for _, opt := range chartOptions(t, p) {
				for _, z := range opt["dataZoom"].([]any) {
					z := z.(map[string]any)
					start, _ := z["start"].(float64) // omitted when 0
					end := z["end"].(float64)
					if math.Abs(start-c.start) > 0.01 || math.Abs(end-c.end) > 0.01 {
						t.Errorf("%s zoom %.2f%% to %.2f%%, want %.2f%% to %.2f%%", z["type"], start, end, c.start, c.end)
					}
				}
			}
		})
	}
}

// TestHTMLRunLabelCannotEndScript: a label is text wherever it appears.
func TestHTMLRunLabelCannotEndScript(t *testing.T) {
	runs := comparedRuns(t)
	runs[0].Result.Label = `</script><script>alert(1)</script>`
	var out bytes.Buffer
	if err := WriteHTML(&out, runs); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "<script>alert(1)") {
		t.Error("a run label ended a script element")
	}
	if !strings.Contains(out.String(), "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the summary table does not show the label as text")
	}
}
