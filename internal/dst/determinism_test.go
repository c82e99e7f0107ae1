package dst

import (
	"testing"
)

// One seed gives one run: the harness owns the schedule and waits for the
// controller's goroutines between steps.
func TestSameSeedSameRun(t *testing.T) {
	for _, seed := range shortSeeds {
		steps := Generate(seed, 40)
		a, b := Run(seed, steps, DefaultOptions()), Run(seed, steps, DefaultOptions())
		if len(a.Trace) != len(b.Trace) {
			t.Fatalf("seed %d: %d steps traced, then %d", seed, len(a.Trace), len(b.Trace))
		}
		for i := range a.Trace {
			if a.Trace[i] != b.Trace[i] {
				t.Errorf("seed %d: the runs part at step %d:\n%s\n%s", seed, i, a.Trace[i], b.Trace[i])
				break
			}
		}
	}
}
