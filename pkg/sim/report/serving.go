package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// servingRows are the measures of each serving Deployment, when a run has
// any: what its users felt (time to first token, the share within the
// SLO) beside the GPU time it held, how much of it idle, and the GPU time
// its requests needed.
func servingRows(runs []Run, row func(string, func(Run) string)) {
	for i, s := range runs[0].Result.Serving {
		cell := func(f func(x engine.ServingResult) string) func(Run) string {
			return func(r Run) string {
				if i >= len(r.Result.Serving) {
					return "-"
				}
				return f(r.Result.Serving[i])
			}
		}
		row(s.Workload+" TTFT p50 / p90 / p99", cell(func(x engine.ServingResult) string {
			return fmt.Sprintf("%s / %s / %s", seconds(x.TTFTP50), seconds(x.TTFTP90), seconds(x.TTFTP99))
		}))
		row(fmt.Sprintf("%s within SLO (%s)", s.Workload, seconds(s.SLO)), cell(func(x engine.ServingResult) string {
			return fmt.Sprintf("%.1f%% of %d (%d refused)", 100*x.SLOAttainment, x.Requests, x.Refused)
		}))
		row(s.Workload+" GPU-hours / idle / work", cell(func(x engine.ServingResult) string {
			return fmt.Sprintf("%.2f / %.2f (%s) / %.2f", x.GPUHours, x.IdleGPUHours, percent(x.IdleGPUHours, x.GPUHours), x.WorkGPUHours)
		}))
	}
}

// seconds prints a time to first token: to the millisecond below 10s,
// "never" for requests that got none.
func seconds(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "never"
	case math.IsNaN(s):
		return "-"
	case s < 10:
		return strconv.FormatFloat(s, 'f', 3, 64) + "s"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + "s"
}

// servingRow is one serving Deployment of one run in the page's serving table.
type servingRow struct {
	Run, Workload, TTFT, SLO, GPUHours, Work string
	Color                                    template.CSS
}

func servingTable(runs []Run) []servingRow {
	var out []servingRow
	for i, r := range runs {
		for _, s := range r.Result.Serving {
			row := servingRow{
				Run: r.Name(), Workload: fmt.Sprintf("%s (%s on %s)", s.Workload, s.Model, s.GPU),
				TTFT:     fmt.Sprintf("%s / %s / %s", seconds(s.TTFTP50), seconds(s.TTFTP90), seconds(s.TTFTP99)),
				SLO:      fmt.Sprintf("%.1f%% within %s", 100*s.SLOAttainment, seconds(s.SLO)),
				GPUHours: fmt.Sprintf("%.2f (%s idle)", s.GPUHours, percent(s.IdleGPUHours, s.GPUHours)),
				Work:     fmt.Sprintf("%.2f", s.WorkGPUHours),
			}
			if len(runs) > 1 {
				row.Color = template.CSS(RunColor(i))
			}
			out = append(out, row)
		}
	}
	return out
}
