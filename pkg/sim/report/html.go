package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/components"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// MaxChartPoints caps the points per series; longer series are thinned to
// evenly spaced samples so the page stays quick to open.
const MaxChartPoints = 2000

// WriteHTML writes a page of charts. With one run: nodes per group,
// pending pods, GPUs allocated and provisioned, replicas per Deployment and
// cost over time, the cost chart naming the lower bound. With several: the
// same measures, one line per run.
func WriteHTML(w io.Writer, runs []Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("html report: no runs")
	}
	page := components.NewPage()
	page.SetPageTitle("gpuscale simulate: " + runs[0].Result.Scenario)
	longest := runs[0].Result
	for _, r := range runs {
		if len(r.Result.Series.Times) > len(longest.Series.Times) {
			longest = r.Result
		}
	}
	idx := thin(len(longest.Series.Times))
	x := make([]string, len(idx))
	for i, k := range idx {
		x[i] = formatDuration(longest.Series.Times[k])
	}
	series := func(n int, v func(k int) float64) []opts.LineData {
		out := make([]opts.LineData, 0, len(idx))
		for _, k := range idx {
			if k < n {
				out = append(out, opts.LineData{Value: v(k)})
			}
		}
		return out
	}
	single := len(runs) == 1
	nodes := newChart("Nodes per group", "nodes", x)
	pending := newChart("Pending pods", "pods", x)
	gpus := newChart("GPUs allocated and provisioned", "GPUs", x)
	replicas := newChart("Deployment replicas", "replicas", x)
	cost := newChart("Cost over time", "dollars", x)
	for _, r := range runs {
		s := r.Result.Series
		n := len(s.Times)
		prefix := ""
		if !single {
			prefix = r.Name() + " "
		}
		if single {
			for g, name := range s.Groups {
				nodes.AddSeries(name, series(n, func(k int) float64 { return float64(s.Nodes[k][g]) }), step())
			}
		} else {
			nodes.AddSeries(r.Name(), series(n, func(k int) float64 {
				t := 0
				for _, c := range s.Nodes[k] {
					t += c
				}
				return float64(t)
			}), step())
		}
		pending.AddSeries(r.Name(), series(n, func(k int) float64 { return float64(s.Pending[k]) }), step())
		gpus.AddSeries(prefix+"allocated", series(n, func(k int) float64 { return float64(s.GPUsAllocated[k]) }), step())
		gpus.AddSeries(prefix+"provisioned", series(n, func(k int) float64 { return float64(s.GPUsProvisioned[k]) }), step())
		for d, name := range s.Deployments {
			replicas.AddSeries(prefix+name, series(n, func(k int) float64 { return float64(s.Replicas[k][d]) }), step())
		}
		cost.AddSeries(r.Name(), series(n, func(k int) float64 { return s.Cost[k] }))
	}
	cost.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Cost over time", Subtitle: boundLine(runs)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "50px"}),
	)
	page.AddCharts(nodes, pending, gpus)
	if len(runs[0].Result.Series.Deployments) > 0 {
		page.AddCharts(replicas)
	}
	page.AddCharts(cost)
	return page.Render(w)
}

// boundLine names each run's lower bound for the cost chart.
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

func newChart(title, unit string, x []string) *charts.Line {
	c := charts.NewLine()
	c.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "1100px", Height: "360px"}),
		charts.WithTitleOpts(opts.Title{Title: title}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "30px"}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "slider", Start: 0, End: 100}),
		charts.WithYAxisOpts(opts.YAxis{Name: unit}),
		charts.WithXAxisOpts(opts.XAxis{Name: "time"}),
	)
	c.SetXAxis(x)
	return c
}

func step() charts.SeriesOpts {
	return charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)})
}

// thin picks at most MaxChartPoints evenly spaced indexes of n samples,
// always keeping the last.
func thin(n int) []int {
	if n <= MaxChartPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, MaxChartPoints)
	for i := 0; i < MaxChartPoints-1; i++ {
		out = append(out, i*(n-1)/(MaxChartPoints-1))
	}
	return append(out, n-1)
}
