package autoscalerflags

import (
	"fmt"
	"strconv"

	"github.com/gpuscale/gpuscale/pkg/repair"
)

// defineRepair adds node repair's flags (package repair holds the
// reasoning behind each default).
func (f *Flags) defineRepair() {
	fs, r := f.fs, &f.Decision.Autoscaler.Repair
	fs.BoolVar(&r.Enabled, "node-repair", r.Enabled, "Remove nodes whose accelerators failed (a --repair-condition held for its time, or GPUs gone from allocatable), within the disruption budgets and windows; their pods move to healthy nodes.")
	conds := &specValue{reset: func() { r.Conditions = nil }, parse: func(s string) error {
		c, err := repair.ParseCondition(s)
		if err != nil {
			return fmt.Errorf("--repair-condition: %w", err)
		}
		r.Conditions = append(r.Conditions, c)
		return nil
	}}
	for _, c := range r.Conditions {
		conds.specs = append(conds.specs, c.String())
	}
	f.checks = append(f.checks, conds)
	fs.Var(conds, "repair-condition", "A node condition that marks a node for repair once it has held this long, as Type=Status:duration; repeatable, the first given replaces the defaults (EKS's AcceleratedHardwareReady=False and NVSentinel's GpuXidError=True and GpuThermalMarginWatch=True, 10m each).")
	fs.DurationVar(&r.MissingGPUsAfter, "repair-missing-gpus-after", r.MissingGPUsAfter, "How long a node may have fewer allocatable GPUs than its capacity (or than its group's template, past --max-node-startup-time) before it is repaired; 0 ignores missing GPUs.")
	fs.Float64Var(&r.MaxPercentage, "repair-max-percentage", r.MaxPercentage, "Most of a group's nodes under repair at once, in percent of its nodes, rounded up (at least one).")
	fs.IntVar(&r.OkUnhealthyCount, "repair-ok-unhealthy-count", r.OkUnhealthyCount, "Unhealthy nodes a group may have before its health brake can hold repair (see --repair-max-unhealthy-percentage).")
	fs.Float64Var(&r.MaxUnhealthyPercentage, "repair-max-unhealthy-percentage", r.MaxUnhealthyPercentage, "When more than --repair-ok-unhealthy-count nodes and more than this percentage of a group are unhealthy, the group looks broken as a whole and none of its nodes is repaired.")
}

// validateRepair reports node repair's bad values, each under its flag.
func (v *problems) validateRepair(r repair.Options) {
	v.notNegative("repair-missing-gpus-after", r.MissingGPUsAfter)
	if p := r.MaxPercentage; !(p > 0 && p <= 100) {
		v.add("repair-max-percentage", "must be above 0 and at most 100, got %s", strconv.FormatFloat(p, 'g', -1, 64))
	}
	v.notNegativeInt("repair-ok-unhealthy-count", r.OkUnhealthyCount)
	if p := r.MaxUnhealthyPercentage; !(p >= 0 && p <= 100) {
		v.add("repair-max-unhealthy-percentage", "must be from 0 to 100, got %s", strconv.FormatFloat(p, 'g', -1, 64))
	}
}
