package forecast

import (
	"fmt"
	"math"
)

// BufferInput is what the buffer decision needs for one workload.
type BufferInput struct {
	Forecast Forecast
	// PerReplica is the demand one replica serves at the HPA's target (the
	// HPA's target average value of the same metric).
	PerReplica float64
	// Running is the number of replicas that run now.
	Running int32
	// Max bounds the buffer (replica-sized slots); MaxReplicas, the HPA's
	// ceiling, bounds forecast replicas.
	Max, MaxReplicas int32
}

// Buffer is the size of the managed CapacityBuffer and why.
type Buffer struct {
	Replicas         int32  // buffer slots, each one replica's pod
	ForecastReplicas int32  // replicas the forecast asks for one lead time ahead
	Bound            string // "" or which bound cut it: "max", "maxReplicas"
	Reason           string // one line for explain and the status ConfigMap
}

// Size turns a forecast into warm capacity: forecast replicas one lead time
// ahead minus those running now, never negative, never above Max. It shrinks
// as soon as the forecast falls: warm nodes that are not claimed are left to
// scale-down.
func Size(in BufferInput) (Buffer, error) {
	if !(in.PerReplica > 0) {
		return Buffer{}, fmt.Errorf("forecast: perReplica %v: want > 0", in.PerReplica)
	}
	if in.Max < 0 || in.MaxReplicas < 0 || in.Running < 0 {
		return Buffer{}, fmt.Errorf("forecast: max %d, maxReplicas %d, running %d: want >= 0", in.Max, in.MaxReplicas, in.Running)
	}
	var b Buffer
	want := math.Ceil(in.Forecast.Value/in.PerReplica - 1e-9)
	b.ForecastReplicas = int32(math.Min(want, math.MaxInt32))
	if in.MaxReplicas > 0 && b.ForecastReplicas > in.MaxReplicas {
		b.ForecastReplicas, b.Bound = in.MaxReplicas, "maxReplicas"
	}
	b.Replicas = max(0, b.ForecastReplicas-in.Running)
	if b.Replicas > in.Max {
		b.Replicas, b.Bound = in.Max, "max"
	}
	b.Reason = fmt.Sprintf("forecast %.1f (level %.1f, trend %+.3f/s, headroom %.1f) at +%s = %d replicas at %.1f each; %d running; buffer %d",
		in.Forecast.Value, in.Forecast.Level, in.Forecast.Trend, in.Forecast.Headroom, in.Forecast.Lead, b.ForecastReplicas, in.PerReplica, in.Running, b.Replicas)
	if b.Bound != "" {
		b.Reason += " (bound " + b.Bound + ")"
	}
	return b, nil
}
