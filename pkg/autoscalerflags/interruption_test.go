package autoscalerflags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

// The interruption taints default to the AWS Node Termination Handler's
// and GKE's; the first one given replaces them, none turns them off; a bad
// spec is refused naming the flag, the value and the part at fault.
func TestInterruptionFlags(t *testing.T) {
	parse := func(settings string) (autoscaler.InterruptionOptions, error) {
		t.Helper()
		s, err := autoscalerflags.ParseSettings(settings)
		if err != nil {
			return autoscaler.InterruptionOptions{}, err
		}
		d, err := autoscalerflags.Parse(s)
		return d.Autoscaler.Interruption, err
	}
	def, err := parse("")
	if err != nil || len(def.Signals) != len(autoscaler.DefaultInterruption().Signals) || def.Penalty != 1 || def.RateWindow != time.Hour ||
		def.CapacityBlockLead != 40*time.Minute {
		t.Fatalf("defaults %+v, %v", def, err)
	}
	got, err := parse("interruption-taint=example.com/going=45s,interruption-penalty=0.5,interruption-rate-window=6h,capacity-block-drain-lead=1h")
	if err != nil || len(got.Signals) != 1 || got.Signals[0] != (autoscaler.InterruptionSignal{TaintKey: "example.com/going", Notice: 45 * time.Second}) ||
		got.Penalty != 0.5 || got.RateWindow != 6*time.Hour || got.CapacityBlockLead != time.Hour {
		t.Errorf("set %+v, %v", got, err)
	}
	if off, err := parse("interruption-taint=none"); err != nil || len(off.Signals) != 0 {
		t.Errorf("none: %+v, %v", off.Signals, err)
	}
	for _, tc := range []struct{ settings, want string }{
		{"interruption-taint=example.com/going", `--interruption-taint "example.com/going": want <taint key>=<notice>`},
		{"interruption-taint=bad key=1m", `taint key "bad key"`},
		{"interruption-taint=example.com/going=soon", `notice "soon": must be a positive duration`},
		{"interruption-taint=example.com/going=0s", `notice "0s": must be a positive duration`},
		{"interruption-penalty=-1", `--interruption-penalty: must be a finite number of at least 0, got -1`},
		{"interruption-rate-window=0s", `--interruption-rate-window`},
		{"capacity-block-drain-lead=-1m", `--capacity-block-drain-lead: must not be negative, got -1m0s`},
	} {
		if _, err := parse(tc.settings); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.settings, err, tc.want)
		}
	}
}
