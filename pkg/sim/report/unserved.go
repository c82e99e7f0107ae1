package report

import (
	"fmt"
	"io"
	"strings"
)

// Unserved tells whether the bound counts work the run never ran: Job work
// not done by the end, replicas the HPA asked for that waited for a node,
// pods never scheduled or still waiting at the end. Cost against such a
// bound flatters the run.
func (r Run) Unserved() bool {
	res := r.Result
	return res.Unserved.PodHours > 0 || res.Unscheduled > 0 || res.PendingAtEnd > 0
}

// costRatio is cost over the bound, marked when the bound counts unserved
// work.
func costRatio(r Run) string {
	if r.Bound.Cost <= 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2fx", r.Result.Cost/r.Bound.Cost)
	if r.Unserved() {
		s += " (!)"
	}
	return s
}

// unservedRows adds, next to cost against the bound, the demand the bound
// counts that the run did not serve.
func unservedRows(row func(string, func(Run) string)) {
	row("unserved pod-hours / GPU-hours", func(r Run) string {
		u := r.Result.Unserved
		return fmt.Sprintf("%.2f / %.2f (%s of demand)", u.PodHours, u.GPUHours, percentOf(u.Share()))
	})
	row("pods pending at end", func(r Run) string { return fmt.Sprintf("%d", r.Result.PendingAtEnd) })
}

// evictionRows adds what evictions cost: the waits they caused and the run
// time of evicted Job pods.
func evictionRows(row func(string, func(Run) string)) {
	row("eviction wait / run cut short (pod-h)", func(r Run) string {
		res := r.Result
		return fmt.Sprintf("%.2f / %.2f (%.2f GPU-h)", res.EvictionWaitHours, res.InterruptedHours, res.InterruptedGPUHours)
	})
	row("cluster limits reached", func(r Run) string {
		if len(r.Result.LimitsReached) == 0 {
			return "none"
		}
		names := make([]string, len(r.Result.LimitsReached))
		for i, h := range r.Result.LimitsReached {
			names[i] = h.Limit
		}
		return strings.Join(names, ", ")
	})
}

// interruptionRow adds, when the cloud interrupted nodes in any run, how
// many, how many it reclaimed before they were drained, and the Job runs
// lost to them.
func interruptionRow(runs []Run, row func(string, func(Run) string)) {
	for _, r := range runs {
		if r.Result.Interruptions.Nodes > 0 {
			row("interrupted nodes (reclaimed) / work lost", func(r Run) string {
				i := r.Result.Interruptions
				return fmt.Sprintf("%d (%d) / %.2f pod-h (%.2f GPU-h)", i.Nodes, i.Reclaimed, i.LostPodHours, i.LostGPUHours)
			})
			return
		}
	}
}

// capacityEndRow adds, when capacity blocks or queued runs ended under
// nodes in any run, how many nodes the cloud took back still running and
// the Job runs lost near those ends.
func capacityEndRow(runs []Run, row func(string, func(Run) string)) {
	for _, r := range runs {
		if c := r.Result.CapacityEnds; c.Reclaimed > 0 || c.LostPodHours > 0 {
			row("nodes taken back at a block's or run's end / work lost", func(r Run) string {
				c := r.Result.CapacityEnds
				return fmt.Sprintf("%d / %.2f pod-h (%.2f GPU-h)", c.Reclaimed, c.LostPodHours, c.LostGPUHours)
			})
			return
		}
	}
}

// gpuFailureRow adds, when GPUs failed in any run, on how many nodes, the
// Job runs lost on them and the time Job pods sat on them for nothing.
func gpuFailureRow(runs []Run, row func(string, func(Run) string)) {
	for _, r := range runs {
		if r.Result.GPUFailures.Nodes > 0 {
			row("nodes with broken GPUs / work lost / stalled", func(r Run) string {
				f := r.Result.GPUFailures
				return fmt.Sprintf("%d / %.2f pod-h (%.2f GPU-h) / %.2f pod-h (%.2f GPU-h)",
					f.Nodes, f.LostPodHours, f.LostGPUHours, f.StalledPodHours, f.StalledGPUHours)
			})
			return
		}
	}
}

// writeUnservedNotes says, under the table, which runs' bounds count work
// that never ran and which limits held pods back.
func writeUnservedNotes(w io.Writer, runs []Run) {
	for _, r := range runs {
		res := r.Result
		if r.Unserved() {
			u := res.Unserved
			fmt.Fprintf(w, "(!) %s: the lower bound counts %.2f pod-hours (%.2f GPU-hours) of demand that never ran "+
				"(Job work not done by the end %.2f, replicas waiting for a node %.2f; %d pods never scheduled, %d waiting at the end), "+
				"so cost / lower bound understates what serving all of it costs\n",
				r.Name(), u.PodHours, u.GPUHours, u.JobPodHours, u.ReplicaPodHours, res.Unscheduled, res.PendingAtEnd)
		}
		for _, h := range res.LimitsReached {
			fmt.Fprintf(w, "%s: %s reached at %s; pods only it could place waited while it held, %s in all\n",
				r.Name(), h.Limit, formatDuration(h.First), formatDuration(h.For))
		}
	}
}

func percentOf(share float64) string {
	switch {
	case share <= 0:
		return "0%"
	case share < 0.001:
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", 100*share)
}
