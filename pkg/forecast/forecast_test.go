package forecast

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func series(n int, step time.Duration, f func(i int) float64) []Sample {
	h := make([]Sample, n)
	for i := range h {
		h[i] = Sample{At: t0.Add(time.Duration(i) * step), Value: f(i)}
	}
	return h
}

func TestPredictFlatIsLevel(t *testing.T) {
	f, err := Predict(series(60, 10*time.Second, func(int) float64 { return 8 }), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if f.Point < 7.99 || f.Point > 8.01 || f.Headroom > 0.01 {
		t.Fatalf("flat 8: got point %v headroom %v", f.Point, f.Headroom)
	}
}

// On a ramp the forecast one lead time ahead is near where the ramp will be,
// not where it is: that is what lets capacity be ready before the HPA asks.
func TestPredictRampLooksAhead(t *testing.T) {
	o := DefaultOptions()
	const slope = 0.05 // per second
	h := series(60, 10*time.Second, func(i int) float64 { return 2 + slope*10*float64(i) })
	f, err := Predict(h, o)
	if err != nil {
		t.Fatal(err)
	}
	now := h[len(h)-1].Value
	ahead := now + slope*o.Lead.Seconds()
	if f.Value < ahead*0.95 {
		t.Fatalf("ramp: forecast %v, demand one lead ahead %v (now %v)", f.Value, ahead, now)
	}
	if f.Value > ahead*1.2 {
		t.Fatalf("ramp: forecast %v far above demand one lead ahead %v", f.Value, ahead)
	}
	// The defaults follow no trend: the headroom covers the ramp. With a
	// trend the point forecast alone already looks ahead.
	o.Alpha, o.Beta = 0.5, 0.3
	if f, err = Predict(h, o); err != nil {
		t.Fatal(err)
	}
	if f.Point < ahead*0.9 {
		t.Fatalf("ramp with a trend: point forecast %v, demand one lead ahead %v (now %v)", f.Point, ahead, now)
	}
}

// Noise the trend cannot explain is covered by the error quantile.
func TestPredictHeadroomCoversNoise(t *testing.T) {
	o := DefaultOptions()
	h := series(120, 10*time.Second, func(i int) float64 { return 10 + float64((i*7)%5) - 2 })
	f, err := Predict(h, o)
	if err != nil {
		t.Fatal(err)
	}
	if f.Headroom <= 0 {
		t.Fatalf("noisy series: headroom %v, want > 0", f.Headroom)
	}
	o.Quantile = 0.5
	g, _ := Predict(h, o)
	if g.Headroom > f.Headroom {
		t.Fatalf("p50 headroom %v above p90 headroom %v", g.Headroom, f.Headroom)
	}
}

func TestPredictFallFollows(t *testing.T) {
	h := series(60, 10*time.Second, func(i int) float64 {
		if i < 30 {
			return 20
		}
		return 2
	})
	o := DefaultOptions()
	o.Window = 2 * time.Minute
	f, err := Predict(h, o)
	if err != nil {
		t.Fatal(err)
	}
	if f.Point > 4 {
		t.Fatalf("after a fall to 2: point %v, want near 2", f.Point)
	}
}

func TestPredictErrors(t *testing.T) {
	o := DefaultOptions()
	o.Alpha = 0
	if _, err := Predict(nil, o); err == nil || !strings.Contains(err.Error(), "alpha 0") {
		t.Fatalf("alpha 0: %v", err)
	}
	h := []Sample{{At: t0.Add(time.Second)}, {At: t0}}
	if _, err := Predict(h, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "sample 1") {
		t.Fatalf("out of order: %v", err)
	}
	if f, err := Predict(nil, DefaultOptions()); err != nil || f.Value != 0 {
		t.Fatalf("empty: %+v %v", f, err)
	}
}

func TestSize(t *testing.T) {
	cases := []struct {
		name              string
		value             float64
		running, max, top int32
		want              int32
		bound             string
	}{
		{"ahead of running", 25, 2, 8, 0, 1, ""},
		{"exact multiple", 30, 1, 8, 0, 2, ""},
		{"forecast falls below running", 5, 4, 8, 0, 0, ""},
		{"max bound", 200, 1, 3, 0, 3, "max"},
		{"maxReplicas bound", 200, 1, 50, 6, 5, "maxReplicas"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Size(BufferInput{Forecast: Forecast{Value: c.value, Lead: 2 * time.Minute}, PerReplica: 10, Running: c.running, Max: c.max, MaxReplicas: c.top})
			if err != nil {
				t.Fatal(err)
			}
			if b.Replicas != c.want || b.Bound != c.bound {
				t.Fatalf("got %d bound %q, want %d bound %q (%s)", b.Replicas, b.Bound, c.want, c.bound, b.Reason)
			}
			for _, w := range []string{"forecast", "running", "+2m0s", "buffer"} {
				if !strings.Contains(b.Reason, w) {
					t.Fatalf("reason %q lacks %q", b.Reason, w)
				}
			}
		})
	}
	if _, err := Size(BufferInput{PerReplica: 0}); err == nil || !strings.Contains(err.Error(), "perReplica 0") {
		t.Fatalf("perReplica 0: %v", err)
	}
}
