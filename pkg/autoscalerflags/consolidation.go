package autoscalerflags

import (
	"fmt"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// Profiles are named sets of decision flags, applied to every flag the
// user did not set. "" keeps the upstream Cluster Autoscaler's defaults.
//
// gpu-cost is for clusters where node-hours of GPUs are the bill: it turns
// consolidation on (nodes go whenever their pods fit elsewhere or on
// cheaper nodes, not only when underused), and scales up by price, the
// cheapest group that takes the pods, with least waste breaking ties.
// Every other flag keeps its default; the reasoning for consolidation's
// own defaults is in pkg/consolidation and docs/consolidation.md.
//
// inference is for LLM serving scaled by an HPA: it turns forecast
// buffers on (warm GPU nodes for the replicas the HPA will ask for within
// --forecast-lead, 120s) with the forecast's documented defaults
// (pkg/forecast, docs/inference.md).
func profile(name string) ([]Setting, error) {
	switch name {
	case "":
		return nil, nil
	case "gpu-cost":
		return []Setting{{"consolidation", "true"}, {"expander", "price,least-waste"}}, nil
	case "inference":
		return []Setting{{"forecast-buffers", "true"}}, nil
	}
	return nil, fmt.Errorf("--profile: unknown profile %q (known: gpu-cost, inference, or empty for the upstream defaults)", name)
}

func (f *Flags) defineConsolidation() {
	fs, c := f.fs, &f.Decision.Autoscaler.Consolidation
	fs.StringVar(&f.profile, "profile", "", "A named set of defaults for the flags not given: gpu-cost (consolidation on, the price expander), inference (forecast buffers on: warm GPU capacity ahead of inference HPAs); empty keeps the upstream defaults.")
	fs.BoolVar(&c.Enabled, "consolidation", c.Enabled, "Move pods so that nodes can go whatever their utilization: delete nodes whose pods fit elsewhere, replace nodes by fewer or cheaper ones.")
	fs.DurationVar(&c.StableTime, "consolidation-stable-time", c.StableTime, "How long nodes must have been consolidatable, loop after loop, before they are moved.")
	fs.Float64Var(&c.MinSavings, "consolidation-min-savings", c.MinSavings, "Least fraction of the hourly price of the nodes a replacement removes that it must save.")
	fs.Float64Var(&c.MinSavingsPerPod, "consolidation-min-savings-per-pod", c.MinSavingsPerPod, "Least hourly saving, in the node groups' price unit, a move must bring for each pod it evicts.")
	fs.BoolVar(&c.SpotReplacements, "consolidation-spot-replacements", c.SpotReplacements, "Whether on-demand nodes may be replaced by spot nodes.")
	fs.IntVar(&c.MaxBatch, "consolidation-max-batch", c.MaxBatch, "Most nodes one multi-node replacement weighs at once.")
	f.specVar("consolidation-budget", c.Budgets, "How many nodes of each group may be disrupted at once, as nodes=<n or n%>[;groups=<regexp>][;schedule=<cron>;duration=<d>]; repeatable, the smallest active one applies.",
		func(s string) error {
			b, err := disruption.ParseBudget(s)
			c.Budgets = append(c.Budgets, b)
			return err
		}, func() { c.Budgets = nil })
	f.specVar("consolidation-window", nil, "A maintenance window outside which consolidation leaves a group alone, as [groups=<regexp>;]schedule=<cron>;duration=<d>; repeatable.",
		func(s string) error {
			w, err := disruption.ParseWindow(s)
			c.Windows = append(c.Windows, w)
			return err
		}, func() { c.Windows = nil })
	d := &f.Decision.Autoscaler.Disruption
	f.specVar("disruption-budget", d.Budgets, "How many nodes of each group may be disrupted voluntarily at once, by scale-down and consolidation together, as nodes=<n or n%>[;groups=<regexp>][;schedule=<cron>;duration=<d>]; repeatable, the smallest active one applies. None by default: only the parallelism flags bound scale-down.",
		func(s string) error {
			b, err := disruption.ParseBudget(s)
			d.Budgets = append(d.Budgets, b)
			return err
		}, func() { d.Budgets = nil })
	f.specVar("disruption-window", nil, "A maintenance window outside which neither scale-down nor consolidation disrupts a group's nodes, as [groups=<regexp>;]schedule=<cron>;duration=<d>; repeatable. Unneeded nodes keep their clocks and go when a window opens.",
		func(s string) error {
			w, err := disruption.ParseWindow(s)
			d.Windows = append(d.Windows, w)
			return err
		}, func() { d.Windows = nil })
}

// specValue is a repeatable flag parsed by a function; the first value
// given replaces the defaults.
type specValue struct {
	specs []string
	set   bool
	parse func(string) error
	reset func()
	errs  []error
}

func (v *specValue) Type() string   { return "spec" }
func (v *specValue) String() string { return "[" + strings.Join(v.specs, ",") + "]" }
func (v *specValue) check() error   { return joinErrors(v.errs) }

func (v *specValue) Set(s string) error {
	if !v.set {
		v.reset()
		v.specs, v.set = nil, true
	}
	v.specs = append(v.specs, s)
	if err := v.parse(s); err != nil {
		v.errs = append(v.errs, err)
	}
	return nil
}

func (f *Flags) specVar(name string, defaults any, usage string, parse func(string) error, reset func()) {
	v := &specValue{parse: parse, reset: reset}
	switch d := defaults.(type) {
	case []disruption.Budget:
		for _, b := range d {
			v.specs = append(v.specs, b.Spec)
		}
	case []autoscaler.InterruptionSignal:
		for _, sig := range d {
			v.specs = append(v.specs, sig.TaintKey+"="+sig.Notice.String())
		}
	}
	f.checks = append(f.checks, v)
	f.fs.Var(v, name, usage)
}

// applyProfile sets the profile's flags that were not given, once.
func (f *Flags) applyProfile() error {
	if f.profileApplied {
		return nil
	}
	f.profileApplied = true
	settings, err := profile(f.profile)
	if err != nil {
		return err
	}
	for _, s := range settings {
		if !f.fs.Changed(s.Name) {
			if err := f.fs.Set(s.Name, s.Value); err != nil {
				return fmt.Errorf("--profile=%s: --%s: %w", f.profile, s.Name, err)
			}
		}
	}
	return nil
}
