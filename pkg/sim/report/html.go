package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// MaxChartPoints caps the points per series; longer series are thinned to
// evenly spaced samples so the page stays quick to open.
const MaxChartPoints = 2000

// runColors are the colours of runs in compare mode, the same run the same
// colour in every chart and in the summary table (Okabe and Ito's
// colour-blind safe palette, its yellow left out for a white page).
var runColors = [...]string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000"}

// RunColor is the colour of the i-th run in a compared report.
func RunColor(i int) string { return runColors[i%len(runColors)] }

// lineTypes tell apart several series of one run in one chart (GPUs
// allocated and provisioned, replicas of several Deployments).
var lineTypes = [...]string{"solid", "dashed", "dotted"}

// WriteHTML writes a self-contained page (the chart library is embedded,
// nothing is fetched): a summary table of the runs naming the cheapest,
// then charts of nodes per group, pending pods, GPUs allocated and
// provisioned, replicas per Deployment and cost over time. With several
// runs each run keeps one colour throughout. Every chart opens zoomed on
// the span where something changed; the slider below each widens it.
func WriteHTML(w io.Writer, runs []Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("html report: no runs")
	}
	page, err := newPage(runs)
	if err != nil {
		return err
	}
	return pageTemplate.Execute(w, page)
}

// chartSpec is one chart of the page: its heading and its echarts option.
type chartSpec struct {
	ID, Title, Subtitle string
	Option              template.JS
}

// timeAxis is the shared x axis: the longest run's sample times, thinned.
type timeAxis struct {
	idx    []int    // sample indexes kept
	labels []string // their times, formatted
	// zoomStart and zoomEnd are the percent of the axis each chart opens on.
	zoomStart, zoomEnd float32
}

func newTimeAxis(runs []Run) timeAxis {
	longest := runs[0].Result
	for _, r := range runs {
		if len(r.Result.Series.Times) > len(longest.Series.Times) {
			longest = r.Result
		}
	}
	a := timeAxis{idx: thin(len(longest.Series.Times)), zoomEnd: 100}
	a.labels = make([]string, len(a.idx))
	for i, k := range a.idx {
		a.labels[i] = formatDuration(longest.Series.Times[k])
	}
	if n := len(longest.Series.Times); n >= 10 && longest.Series.Times[n-1] > 0 {
		if first, last, ok := activity(runs); ok {
			span := float64(longest.Series.Times[n-1])
			a.zoomStart, a.zoomEnd = zoomWindow(float64(first)/span, float64(last)/span)
		}
	}
	return a
}

// buildCharts returns the page's charts, in order.
func buildCharts(runs []Run, axis timeAxis) ([]chartSpec, error) {
	compare := len(runs) > 1
	series := func(n int, v func(k int) float64) []opts.LineData {
		out := make([]opts.LineData, 0, len(axis.idx))
		for _, k := range axis.idx {
			if k < n {
				out = append(out, opts.LineData{Value: v(k)})
			}
		}
		return out
	}
	nodes, pending, gpus := newChart(axis), newChart(axis), newChart(axis)
	replicas, waiting, cost := newChart(axis), newChart(axis), newChart(axis)
	for i, r := range runs {
		s := &r.Result.Series
		n := len(s.Times)
		style := func(variant int) charts.SeriesOpts { return seriesStyle(len(runs), i, variant) }
		prefix := ""
		if compare {
			prefix = r.Name() + " "
			nodes.AddSeries(r.Name(), series(n, func(k int) float64 { return float64(sum(s.Nodes[k])) }), style(0))
		} else {
			for g, name := range s.Groups {
				nodes.AddSeries(name, series(n, func(k int) float64 { return float64(s.Nodes[k][g]) }), style(0))
			}
		}
		pending.AddSeries(r.Name(), series(n, func(k int) float64 { return float64(s.Pending[k]) }), style(0))
		gpus.AddSeries(prefix+"provisioned", series(n, func(k int) float64 { return float64(s.GPUsProvisioned[k]) }), style(0))
		gpus.AddSeries(prefix+"allocated", series(n, func(k int) float64 { return float64(s.GPUsAllocated[k]) }), style(1))
		for d, name := range s.Deployments {
			replicas.AddSeries(prefix+name, series(n, func(k int) float64 { return float64(s.Replicas[k][d]) }), style(d))
		}
		for d, name := range s.Serving {
			waiting.AddSeries(prefix+name, series(n, func(k int) float64 { return float64(s.Waiting[k][d]) }), style(d))
		}
		cost.AddSeries(r.Name(), series(n, func(k int) float64 { return s.Cost[k] }), style(0))
	}
	specs := []struct {
		title, subtitle string
		chart           *charts.Line
	}{
		{"Nodes per group", "", nodes},
		{"Pending pods", "", pending},
		{"GPUs provisioned and allocated", "", gpus},
		{"Deployment replicas", "", replicas},
		{"Requests waiting for a first token", "serving Deployments, at the router and in replica queues", waiting},
		{"Cost so far ($)", boundLine(runs), cost},
	}
	if compare {
		specs[0].title = "Nodes (all groups)"
	}
	var out []chartSpec
	for i, sp := range specs {
		if sp.chart == replicas && len(runs[0].Result.Series.Deployments) == 0 ||
			sp.chart == waiting && len(runs[0].Result.Series.Serving) == 0 {
			continue
		}
		opt, err := chartOption(sp.chart)
		if err != nil {
			return nil, fmt.Errorf("html report: chart %q: %w", sp.title, err)
		}
		out = append(out, chartSpec{ID: fmt.Sprintf("chart-%d", i), Title: sp.title, Subtitle: sp.subtitle, Option: opt})
	}
	return out, nil
}

// chartOption is a chart's echarts option as JSON fit for a script
// element: encoding/json escapes <, > and &, so a run's label cannot end
// the script.
func chartOption(c *charts.Line) (template.JS, error) {
	c.Validate()
	b, err := json.Marshal(c.JSON())
	if err != nil {
		return "", err
	}
	return template.JS(b), nil
}

// newChart lays a chart out so nothing overlaps: the legend (scrolling
// when long) above the plot, the zoom slider below it, and the plot
// between with room for its axis labels. Long series draw at once, without
// animation.
func newChart(axis timeAxis) *charts.Line {
	c := charts.NewLine()
	c.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0", Left: "center"}),
		charts.WithGridOpts(opts.Grid{Top: "44", Bottom: "64", Left: "16", Right: "32", ContainLabel: opts.Bool(true)}),
		charts.WithDataZoomOpts(
			opts.DataZoom{Type: "slider", Start: axis.zoomStart, End: axis.zoomEnd},
			opts.DataZoom{Type: "inside", Start: axis.zoomStart, End: axis.zoomEnd},
		),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category"}),
	)
	c.SetXAxis(axis.labels)
	return c
}

// seriesStyle draws a stepped line. Each of several runs takes its colour,
// variant picking the line type, and runs drawn earlier draw wider, so
// where later runs' lines lie on theirs they still show at the edges. A
// single run's series take the palette in turn.
func seriesStyle(runs, run, variant int) charts.SeriesOpts {
	return func(s *charts.SingleSeries) {
		charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)})(s)
		if runs < 2 {
			return
		}
		color := RunColor(run)
		s.Color = color
		width := 2 + 1.5*float32(runs-1-run)
		charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: width, Type: lineTypes[variant%len(lineTypes)]})(s)
		charts.WithItemStyleOpts(opts.ItemStyle{Color: color})(s)
	}
}

// activity returns the first and last time at which any run's nodes,
// pending pods, GPUs or replicas changed; ok is false when nothing did.
func activity(runs []Run) (first, last time.Duration, ok bool) {
	for _, r := range runs {
		s := &r.Result.Series
		for k := 1; k < len(s.Times); k++ {
			if !changed(s, k) {
				continue
			}
			if !ok || s.Times[k-1] < first {
				first = s.Times[k-1]
			}
			last, ok = max(last, s.Times[k]), true
		}
	}
	return first, last, ok
}

// changed tells whether sample k differs from sample k-1 in anything but
// cost (which grows whenever a node is billed).
func changed(s *engine.Series, k int) bool {
	if s.Pending[k] != s.Pending[k-1] || s.GPUsAllocated[k] != s.GPUsAllocated[k-1] || s.GPUsProvisioned[k] != s.GPUsProvisioned[k-1] {
		return true
	}
	for g := range s.Nodes[k] {
		if s.Nodes[k][g] != s.Nodes[k-1][g] {
			return true
		}
	}
	for d := range s.Replicas[k] {
		if s.Replicas[k][d] != s.Replicas[k-1][d] {
			return true
		}
	}
	return false
}

// zoomWindow pads the active span [first, last] (fractions of the axis)
// by a tenth of its width on each side, at least 2% of the axis, and
// shows the whole axis when the span covers most of it anyway.
func zoomWindow(first, last float64) (start, end float32) {
	pad := max((last-first)/10, 0.02)
	lo, hi := max(0, first-pad), min(1, last+pad)
	if hi-lo > 0.8 {
		return 0, 100
	}
	return float32(lo * 100), float32(hi * 100)
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
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
