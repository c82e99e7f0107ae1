package engine_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

func metav1Duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// parse reads a scenario written in the test.
func parse(t *testing.T, yaml string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *scenario.Scenario, edit ...func(*engine.Options)) *engine.Result {
	t.Helper()
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range edit {
		f(&o)
	}
	res, err := engine.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// firstChange returns when series v first differs from its first value.
func firstChange(res *engine.Result, v func(i int) int, from time.Duration) (time.Duration, int) {
	start := -1
	for i, x := range res.Series.Times {
		if x < from {
			continue
		}
		if start < 0 {
			start = v(i)
			continue
		}
		if v(i) != start {
			return x, v(i)
		}
	}
	return -1, start
}

func approx(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
