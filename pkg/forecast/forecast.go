package forecast

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Sample is one reading of the demand metric (for example queued plus
// running requests summed over the workload's replicas).
type Sample struct {
	At    time.Time
	Value float64
}

// Options are the forecast's parameters. DefaultOptions documents each.
type Options struct {
	// Enabled turns forecast buffers on (--forecast-buffers).
	Enabled bool
	// MaxBuffer bounds each workload's warm replicas (0: only the HPA's
	// maxReplicas does).
	MaxBuffer int32
	// Interval is how often demand is read while a workload is forecast:
	// a loop is due that long after the last.
	Interval time.Duration
	// Alpha weighs the newest sample in the level (0 < Alpha <= 1).
	Alpha float64
	// Beta weighs the newest slope in the trend (0 <= Beta <= 1).
	Beta float64
	// Lead is how far ahead to forecast: the time from a scale-up decision
	// to a serving replica on a new node.
	Lead time.Duration
	// Quantile of recent forecast errors added as headroom (0..1).
	Quantile float64
	// Window is how much recent history the error quantile looks at.
	Window time.Duration
}

// DefaultOptions: a level that follows over about five readings (0.2) and no
// trend (0): demand read every 15 s is noisy, and a slope projected two
// minutes ahead turns that noise into warm nodes that are bought and left
// idle; rises are covered by the headroom instead, the 90th percentile (the
// SLO is a p90) of how far demand came out above the forecast over the last
// 10 minutes, at the lead of 120 s (start-up of a GPU node plus model load).
// Demand is read every 15 s (the HPA's sync period: its metrics change no
// faster), and no bound is put on the buffer beyond the HPA's own.
func DefaultOptions() Options {
	return Options{Alpha: 0.2, Beta: 0, Lead: 120 * time.Second, Quantile: 0.9, Window: 10 * time.Minute, Interval: 15 * time.Second}
}

// Validate names the field and value that are out of range.
func (o Options) Validate() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha <= 1):
		return fmt.Errorf("forecast: alpha %v: want 0 < alpha <= 1", o.Alpha)
	case !(o.Beta >= 0 && o.Beta <= 1):
		return fmt.Errorf("forecast: beta %v: want 0 <= beta <= 1", o.Beta)
	case o.Lead < 0:
		return fmt.Errorf("forecast: lead %v: want >= 0", o.Lead)
	case !(o.Quantile >= 0 && o.Quantile <= 1):
		return fmt.Errorf("forecast: quantile %v: want 0 <= quantile <= 1", o.Quantile)
	case o.Window < 0:
		return fmt.Errorf("forecast: window %v: want >= 0", o.Window)
	case o.MaxBuffer < 0:
		return fmt.Errorf("forecast: max buffer %d: want >= 0", o.MaxBuffer)
	case o.Enabled && o.Interval <= 0:
		return fmt.Errorf("forecast: interval %v: want > 0", o.Interval)
	}
	return nil
}

// Forecast is the demand expected one lead time after the last sample.
type Forecast struct {
	Level    float64 // smoothed current demand
	Trend    float64 // per second
	Point    float64 // Level + Trend*Lead, never below 0
	Headroom float64 // quantile of recent under-forecasts at the lead, >= 0
	Value    float64 // Point + Headroom: what to provision for
	Samples  int
	Lead     time.Duration // the horizon it was made for
}

// Predict forecasts demand one lead time after the last sample. Samples must
// be in time order; an empty history forecasts zero.
func Predict(h []Sample, o Options) (Forecast, error) {
	if err := o.Validate(); err != nil {
		return Forecast{}, err
	}
	for i := 1; i < len(h); i++ {
		if h[i].At.Before(h[i-1].At) {
			return Forecast{}, fmt.Errorf("forecast: sample %d at %s is before sample %d at %s", i, h[i].At.Format(time.RFC3339), i-1, h[i-1].At.Format(time.RFC3339))
		}
	}
	if len(h) == 0 {
		return Forecast{Lead: o.Lead}, nil
	}
	lead := o.Lead.Seconds()
	level, trend := h[0].Value, 0.0
	// preds[i] is the forecast for time h[i].At+Lead made at sample i.
	type pred struct {
		at time.Time
		v  float64
	}
	preds := make([]pred, 0, len(h))
	preds = append(preds, pred{h[0].At.Add(o.Lead), level})
	for i := 1; i < len(h); i++ {
		dt := h[i].At.Sub(h[i-1].At).Seconds()
		prev := level
		level = o.Alpha*h[i].Value + (1-o.Alpha)*(level+trend*dt)
		if dt > 0 {
			trend = o.Beta*(level-prev)/dt + (1-o.Beta)*trend
		}
		preds = append(preds, pred{h[i].At.Add(o.Lead), math.Max(0, level+trend*lead)})
	}
	f := Forecast{Level: level, Trend: trend, Point: math.Max(0, level+trend*lead), Samples: len(h), Lead: o.Lead}

	// Errors: for each past forecast whose target time has a sample, how far
	// demand came out above it. Only the window before the last sample counts.
	last := h[len(h)-1].At
	var errs []float64
	j := 0
	for _, p := range preds {
		if p.at.After(last) {
			break
		}
		if last.Sub(p.at) > o.Window {
			continue
		}
		for j < len(h)-1 && h[j+1].At.Compare(p.at) <= 0 {
			j++
		}
		errs = append(errs, h[j].Value-p.v)
	}
	f.Headroom = math.Max(0, quantile(errs, o.Quantile))
	f.Value = f.Point + f.Headroom
	return f, nil
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
