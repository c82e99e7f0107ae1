package autoscalerflags

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

func (f *Flags) defineInterruption() {
	fs, o := f.fs, &f.Decision.Autoscaler.Interruption
	f.specVar("interruption-taint", o.Signals, "A taint that says a node is being taken away, and the notice it leaves, as <taint key>=<duration>; repeatable, the first given replaces the defaults; none turns interruption handling off.",
		func(s string) error {
			if s == "none" {
				return nil
			}
			sig, err := ParseInterruptionSignal(s)
			o.Signals = append(o.Signals, sig)
			return err
		}, func() { o.Signals = nil })
	fs.DurationVar(&o.RateWindow, "interruption-rate-window", o.RateWindow, "How far back a node group's interruptions count towards its interruption rate.")
	fs.Float64Var(&o.Penalty, "interruption-penalty", o.Penalty, "Hours of a node's price one interruption costs on top of the price: the price expander sees price × (1 + interruptions per node-hour × this); 0 leaves prices alone.")
	fs.DurationVar(&o.CapacityBlockLead, "capacity-block-drain-lead", o.CapacityBlockLead, "How long before a node group's capacity block ends (its capacityblockend option) its nodes are drained, their pods' replacements ordered on other groups, and the group no longer grown; 0 turns it off.")
}

// ParseInterruptionSignal reads <taint key>=<notice>.
func ParseInterruptionSignal(s string) (autoscaler.InterruptionSignal, error) {
	key, notice, ok := strings.Cut(s, "=")
	if !ok {
		return autoscaler.InterruptionSignal{}, fmt.Errorf("--interruption-taint %q: want <taint key>=<notice>, e.g. %s=2m", s, autoscaler.TaintAWSSpotInterruption)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return autoscaler.InterruptionSignal{}, fmt.Errorf("--interruption-taint %q: taint key %q: %s", s, key, strings.Join(errs, "; "))
	}
	d, err := time.ParseDuration(notice)
	if err != nil || d <= 0 {
		return autoscaler.InterruptionSignal{}, fmt.Errorf("--interruption-taint %q: notice %q: must be a positive duration", s, notice)
	}
	return autoscaler.InterruptionSignal{TaintKey: key, Notice: d}, nil
}

func (v *problems) interruption(o autoscaler.InterruptionOptions) {
	v.positive("interruption-rate-window", o.RateWindow)
	if o.CapacityBlockLead < 0 {
		v.add("capacity-block-drain-lead", "must not be negative, got %s", o.CapacityBlockLead)
	}
	if p := o.Penalty; !(p >= 0) || math.IsInf(p, 0) {
		v.add("interruption-penalty", "must be a finite number of at least 0, got %s", strconv.FormatFloat(p, 'g', -1, 64))
	}
}
