package benchmeasure

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	twenty := ms(20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
	cases := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"none", nil, 0.99, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p99 of 20 is the slowest", twenty, 0.99, 20 * time.Millisecond},
		{"median of 20 is the 10th", twenty, 0.5, 10 * time.Millisecond},
		{"p0 is the fastest", twenty, 0, time.Millisecond},
	}
	for _, tc := range cases {
		if got := Percentile(tc.ds, tc.q); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if twenty[0] != 20*time.Millisecond {
		t.Error("Percentile reordered its input")
	}
}
