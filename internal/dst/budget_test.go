package dst

import (
	"runtime"
	"testing"
	"time"
)

// shortSeeds are the schedules every test run explores (make test); the
// long run (longrun_test.go) explores as many as it is given.
var shortSeeds = []uint64{1, 2, 3}

// A short search over fixed seeds finds nothing.
func TestShortSearch(t *testing.T) {
	o := DefaultOptions()
	o.TailTicks = 40
	for _, seed := range shortSeeds {
		start := time.Now()
		res := Run(seed, Generate(seed, 40), o)
		for _, v := range res.Violations {
			t.Errorf("seed %d: %v", seed, v)
		}
		t.Logf("seed %d: %d steps, %d checks, faults %v, %s, %d goroutines", seed, len(res.Trace), res.Checks, res.Faults,
			time.Since(start).Round(time.Millisecond), runtime.NumGoroutine())
	}
}
