// Package report turns simulation results into what people read: a summary
// table (one column per run, so option sets compare side by side, with the
// cost lower bounds beside each), a CSV time series, and an HTML page of
// charts (nodes per group, pending pods, GPU allocation, replicas, cost).
package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/bound/classes"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// Run is one simulation's result with its lower bounds.
type Run struct {
	Result *engine.Result
	// Bound is the lower bound the summary compares the cost with: the
	// per-pod bound (classes.Compute) when the scenario is known, the
	// fluid one otherwise; BoundKind names it.
	Bound     bound.Result
	BoundKind string
	// Fluid is the fluid bound (bound.Compute), the demand's resources
	// packed as one fluid.
	Fluid bound.Result
}

// The kinds of bound a Run compares its cost with.
const (
	BoundPerPod = "per pod"
	BoundFluid  = "fluid"
)

// NewRun computes the lower bounds of a result. With the scenario sc that
// was run, the summary's bound is the per-pod one (each pod whole on a
// node group it may run on); with sc nil it is the fluid one.
func NewRun(sc *scenario.Scenario, res *engine.Result) (Run, error) {
	fluid, err := bound.Compute(res.Shapes, res.Demand, res.Duration)
	if err != nil {
		return Run{}, err
	}
	r := Run{Result: res, Bound: fluid, BoundKind: BoundFluid, Fluid: fluid}
	if sc == nil {
		return r, nil
	}
	pods, err := classes.Compute(sc, res)
	if err != nil {
		return Run{}, fmt.Errorf("per-pod bound of %s: %w", sc.Name, err)
	}
	r.Bound, r.BoundKind = pods, BoundPerPod
	return r, nil
}

// Name is the run's label, or its scenario's name.
func (r Run) Name() string {
	if r.Result.Label != "" {
		return r.Result.Label
	}
	return r.Result.Scenario
}

// WriteSummary writes the summary table, one column per run.
func WriteSummary(w io.Writer, runs []Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("summary: no runs")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, cell func(r Run) string) {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = cell(r)
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, strings.Join(cells, "\t"))
	}
	fmt.Fprintf(tw, "scenario %s, %s simulated\t%s\n", runs[0].Result.Scenario, formatDuration(runs[0].Result.Duration), strings.Join(names(runs), "\t"))
	row("cost ($)", func(r Run) string { return fmt.Sprintf("%.2f", r.Result.Cost) })
	row(fmt.Sprintf("lower bound, %s ($)", runs[0].BoundKind), func(r Run) string { return fmt.Sprintf("%.2f", r.Bound.Cost) })
	row("cost / lower bound", costRatio)
	unservedRows(row)
	if runs[0].BoundKind != BoundFluid {
		row("fluid bound ($)", func(r Run) string { return fmt.Sprintf("%.2f", r.Fluid.Cost) })
	}
	row("node-hours", func(r Run) string { return fmt.Sprintf("%.1f", r.Result.NodeHours) })
	for i, g := range runs[0].Result.Groups {
		row(fmt.Sprintf("  %s node-hours / $", g.ID), func(r Run) string {
			if i >= len(r.Result.Groups) {
				return "-"
			}
			x := r.Result.Groups[i]
			return fmt.Sprintf("%.1f / %.2f", x.NodeHours, x.Cost)
		})
	}
	row("GPU-hours allocated / provisioned", func(r Run) string {
		return fmt.Sprintf("%.1f / %.1f (%s)", r.Result.GPUHoursAllocated, r.Result.GPUHoursProvisioned,
			percent(r.Result.GPUHoursAllocated, r.Result.GPUHoursProvisioned))
	})
	row("GPU-hours demanded (bound)", func(r Run) string { return fmt.Sprintf("%.1f", r.Bound.GPUHours) })
	servingRows(runs, row)
	row("pending wait p50 / p90 / p99", func(r Run) string {
		res := r.Result
		return fmt.Sprintf("%s / %s / %s", formatDuration(res.WaitPercentile(50)), formatDuration(res.WaitPercentile(90)),
			formatDuration(res.WaitPercentile(99)))
	})
	row("pods submitted / never scheduled", func(r Run) string {
		return fmt.Sprintf("%d / %d", r.Result.Submitted, r.Result.Unscheduled)
	})
	gangRows(runs, row)
	row("scale-ups (nodes added)", func(r Run) string { return fmt.Sprintf("%d (%d)", r.Result.ScaleUps, r.Result.NodesAdded) })
	row("scale-downs (nodes removed)", func(r Run) string { return fmt.Sprintf("%d", r.Result.NodesRemoved) })
	row("pods evicted", func(r Run) string { return fmt.Sprintf("%d", r.Result.Evictions) })
	consolidationRow(runs, row)
	evictionRows(row)
	interruptionRow(runs, row)
	gpuFailureRow(runs, row)
	capacityEndRow(runs, row)
	row("HPA replica changes", func(r Run) string { return fmt.Sprintf("%d", r.Result.HPAChanges) })
	row("autoscaler loops", func(r Run) string { return fmt.Sprintf("%d", r.Result.Loops) })
	if err := tw.Flush(); err != nil {
		return err
	}
	writeUnservedNotes(w, runs)
	for _, r := range runs {
		if len(r.Fluid.Unserved) > 0 {
			fmt.Fprintf(w, "%s: no node group offers %s; that demand is left out of the bounds\n", r.Name(), strings.Join(r.Fluid.Unserved, ", "))
		}
		if r.BoundKind == BoundPerPod && len(r.Bound.Unserved) > 0 {
			fmt.Fprintf(w, "%s: the pods of %s fit no node group they may run on; they are left out of the per-pod bound\n",
				r.Name(), strings.Join(r.Bound.Unserved, ", "))
		}
	}
	return nil
}

func names(runs []Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Name()
	}
	return out
}

func percent(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

// formatDuration rounds for reading: seconds below an hour, minutes above.
func formatDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Second).String()
	}
}

// consolidationRow says what consolidation did, when a run has it on: its
// moves, or why it made none.
func consolidationRow(runs []Run, row func(string, func(Run) string)) {
	for _, r := range runs {
		if r.Result.Consolidation.Enabled {
			row("consolidation", func(r Run) string { return r.Result.Consolidation.Summary() })
			return
		}
	}
}

// gangRows are the jobs of several pods that start together, when a run
// has any: how many never started, their waits, and the
// ProvisioningRequests they opened.
func gangRows(runs []Run, row func(string, func(Run) string)) {
	has := false
	for _, r := range runs {
		has = has || r.Result.Gangs.Jobs > 0
	}
	if !has {
		return
	}
	row("gang jobs / never started", func(r Run) string {
		return fmt.Sprintf("%d / %d", r.Result.Gangs.Jobs, r.Result.Gangs.NeverStarted)
	})
	row("gang wait p50 / p90 / p99", func(r Run) string {
		g := &r.Result.Gangs
		return fmt.Sprintf("%s / %s / %s", formatDuration(g.WaitPercentile(50)), formatDuration(g.WaitPercentile(90)),
			formatDuration(g.WaitPercentile(99)))
	})
	row("ProvisioningRequests (opened again)", func(r Run) string {
		return fmt.Sprintf("%d (%d)", r.Result.Gangs.Requests, r.Result.Gangs.Requeues)
	})
	for _, r := range runs {
		if r.Result.QueuedRequests > 0 {
			row("queued capacity requests", func(r Run) string { return fmt.Sprintf("%d", r.Result.QueuedRequests) })
			return
		}
	}
}
