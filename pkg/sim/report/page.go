package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"strings"
)

// echartsJS is Apache ECharts 5.4.3's dist/echarts.min.js, unmodified: the
// file go-echarts links from its assets host, embedded so a report opens
// offline. Its licence and notice are beside it in assets/echarts.
//
//go:embed assets/echarts/echarts.min.js
var echartsJS string

// EChartsVersion is the version of the embedded chart library.
const EChartsVersion = "5.4.3"

// page is what pageTemplate renders.
type page struct {
	Title, Scenario, Simulated string
	BoundKind                  string
	Compare                    bool
	Rows                       []summaryRow
	Serving                    []servingRow
	Verdict                    string
	Notes                      []string
	Charts                     []chartSpec
	ECharts                    template.JS
	EChartsVersion             string
}

// summaryRow is one run in the page's summary table.
type summaryRow struct {
	Name      string
	Color     template.CSS
	Cost      string
	Bound     string
	Ratio     string
	NodeHours string
	GPUUse    string
	Waits     string
	Pending   string
	Changes   string
	Cheapest  bool
}

func newPage(runs []Run) (*page, error) {
	axis := newTimeAxis(runs)
	cs, err := buildCharts(runs, axis)
	if err != nil {
		return nil, err
	}
	first := runs[0].Result
	p := &page{
		Title:     "gpuscale simulate: " + first.Scenario,
		Scenario:  first.Scenario,
		Simulated: formatDuration(first.Duration),
		BoundKind: runs[0].BoundKind,
		Compare:   len(runs) > 1,
		Charts:    cs,
		// The library is inserted as the text of a script element; it
		// holds no "</script" (a test checks), so it cannot end it early.
		ECharts:        template.JS(echartsJS),
		EChartsVersion: EChartsVersion,
	}
	cheapest := cheapestRun(runs)
	for i, r := range runs {
		p.Rows = append(p.Rows, newSummaryRow(r, i, p.Compare, i == cheapest))
	}
	p.Serving = servingTable(runs)
	p.Verdict = verdict(runs, cheapest)
	p.Notes = unservedNotes(runs)
	return p, nil
}

func newSummaryRow(r Run, i int, compare, cheapest bool) summaryRow {
	res := r.Result
	row := summaryRow{
		Name:      r.Name(),
		Cost:      fmt.Sprintf("$%.2f", res.Cost),
		Bound:     fmt.Sprintf("$%.2f", r.Bound.Cost),
		Ratio:     ratio(res.Cost, r.Bound.Cost),
		NodeHours: fmt.Sprintf("%.1f", res.NodeHours),
		GPUUse: fmt.Sprintf("%s of %.1f GPU-hours", percent(res.GPUHoursAllocated, res.GPUHoursProvisioned),
			res.GPUHoursProvisioned),
		Waits: fmt.Sprintf("%s / %s / %s", formatDuration(res.WaitPercentile(50)), formatDuration(res.WaitPercentile(90)),
			formatDuration(res.WaitPercentile(99))),
		Pending:  fmt.Sprintf("%d of %d", res.Unscheduled, res.Submitted),
		Changes:  fmt.Sprintf("+%d / -%d", res.NodesAdded, res.NodesRemoved),
		Cheapest: cheapest && compare,
	}
	if res.GPUHoursProvisioned <= 0 {
		row.GPUUse = "no GPUs"
	}
	if compare {
		row.Color = template.CSS(RunColor(i))
	}
	return row
}

func ratio(cost, bound float64) string {
	if bound <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", cost/bound)
}

// cheapestRun is the index of the run that cost least, the first on a tie.
func cheapestRun(runs []Run) int {
	best := 0
	for i, r := range runs {
		if r.Result.Cost < runs[best].Result.Cost {
			best = i
		}
	}
	return best
}

// verdict names the cheapest run; when it left more pods unscheduled than
// another run, it also names the cheapest of those that left the fewest,
// since saving money by not running pods is no saving.
func verdict(runs []Run, cheapest int) string {
	c := runs[cheapest]
	if len(runs) == 1 {
		return fmt.Sprintf("%s cost $%.2f, %s the %s lower bound.", c.Name(), c.Result.Cost, ratio(c.Result.Cost, c.Bound.Cost), c.BoundKind)
	}
	text := fmt.Sprintf("Cheapest run: %s at $%.2f (%s the %s lower bound).", c.Name(), c.Result.Cost,
		ratio(c.Result.Cost, c.Bound.Cost), c.BoundKind)
	fewest := c.Result.Unscheduled
	for _, r := range runs {
		fewest = min(fewest, r.Result.Unscheduled)
	}
	if c.Result.Unscheduled == fewest {
		return text
	}
	served := -1
	for i, r := range runs {
		if r.Result.Unscheduled == fewest && (served < 0 || r.Result.Cost < runs[served].Result.Cost) {
			served = i
		}
	}
	s := runs[served]
	return text + fmt.Sprintf(" It left %d pods pending at the end; %s left %d at $%.2f.", c.Result.Unscheduled, s.Name(), fewest, s.Result.Cost)
}

// unservedNotes say which demand the bounds leave out, as the text summary
// does.
func unservedNotes(runs []Run) []string {
	var out []string
	for _, r := range runs {
		if len(r.Fluid.Unserved) > 0 {
			out = append(out, fmt.Sprintf("%s: no node group offers %s; that demand is left out of the bounds.", r.Name(), strings.Join(r.Fluid.Unserved, ", ")))
		}
		if r.BoundKind == BoundPerPod && len(r.Bound.Unserved) > 0 {
			out = append(out, fmt.Sprintf("%s: the pods of %s fit no node group they may run on; they are left out of the per-pod bound.",
				r.Name(), strings.Join(r.Bound.Unserved, ", ")))
		}
	}
	return out
}

// boundLine names each run's lower bound under the cost chart.
func boundLine(runs []Run) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = fmt.Sprintf("$%.2f", r.Bound.Cost)
		if len(runs) > 1 {
			parts[i] = r.Name() + " " + parts[i]
		}
	}
	return fmt.Sprintf("lower bound (%s): %s", runs[0].BoundKind, strings.Join(parts, ", "))
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1200px; padding: 0 16px; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 4px; }
h2 { font-size: 1.1em; margin: 28px 0 2px; }
.meta, .sub, footer { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; margin: 12px 0; width: 100%; font-size: 0.92em; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; }
td { white-space: nowrap; }
th { background: #f4f4f4; font-weight: 600; vertical-align: bottom; }
th:first-child, td:first-child { text-align: left; }
tr.cheapest td { font-weight: 600; background: #eef7ee; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px; border-radius: 2px; }
#verdict { font-size: 1.05em; }
.chart { width: 100%; height: 380px; }
</style>
<script>{{.ECharts}}</script>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">Scenario {{.Scenario}}, {{.Simulated}} of virtual time{{if .Compare}}, {{len .Rows}} runs compared{{end}}.</p>
<table id="summary">
<thead><tr><th>run</th><th>cost</th><th>lower bound ({{.BoundKind}})</th><th>cost / bound</th><th>node-hours</th><th>GPU use</th><th>pending wait p50 / p90 / p99</th><th>pods pending at end</th><th>nodes added / removed</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr{{if .Cheapest}} class="cheapest"{{end}}><td>{{if .Color}}<span class="swatch" style="background: {{.Color}}"></span>{{end}}{{.Name}}</td><td>{{.Cost}}</td><td>{{.Bound}}</td><td>{{.Ratio}}</td><td>{{.NodeHours}}</td><td>{{.GPUUse}}</td><td>{{.Waits}}</td><td>{{.Pending}}</td><td>{{.Changes}}</td></tr>
{{- end}}
</tbody>
</table>
{{- if .Serving}}
<table id="serving">
<thead><tr><th>run</th><th>serving</th><th>time to first token p50 / p90 / p99</th><th>within SLO</th><th>GPU-hours (idle)</th><th>GPU-hours of work</th></tr></thead>
<tbody>
{{- range .Serving}}
<tr><td>{{if .Color}}<span class="swatch" style="background: {{.Color}}"></span>{{end}}{{.Run}}</td><td>{{.Workload}}</td><td>{{.TTFT}}</td><td>{{.SLO}}</td><td>{{.GPUHours}}</td><td>{{.Work}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
<p id="verdict">{{.Verdict}}</p>
{{- range .Notes}}
<p class="sub">{{.}}</p>
{{- end}}
{{- range .Charts}}
<h2>{{.Title}}</h2>
{{- if .Subtitle}}
<p class="sub">{{.Subtitle}}</p>
{{- end}}
<div class="chart" id="{{.ID}}"></div>
{{- end}}
<footer><p>Charts drawn with Apache ECharts {{.EChartsVersion}} (Apache License 2.0), embedded in this page. Drag the slider under a chart, or scroll over it, to zoom; all charts follow.</p></footer>
<script>
(function () {
  var charts = [];
  {{- range .Charts}}
  charts.push(echarts.init(document.getElementById({{.ID}})));
  charts[charts.length - 1].setOption({{.Option}});
  {{- end}}
  charts.forEach(function (c) { c.group = "gpuscale"; });
  echarts.connect("gpuscale");
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
})();
</script>
</body>
</html>
`))
