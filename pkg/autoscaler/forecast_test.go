package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/forecast"
)

func forecasting(on bool) func(*autoscaler.Options) {
	return func(o *autoscaler.Options) { o.Forecast.Enabled = on }
}

// llmDemand is serving/llm with value requests in flight, 4 a replica,
// running replicas asked for.
func llmDemand(value float64, running int32) forecast.Demand {
	shape := builder.Pod("shape").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()
	return forecast.Demand{Namespace: "serving", Name: "llm", Value: value, PerReplica: 4, Running: running, MaxReplicas: 16,
		Template: v1.PodTemplateSpec{Spec: shape.Spec}}
}

// Demand rising to 16 requests in flight, one replica running: the
// loop holds warm room for the replicas the forecast asks for beyond the
// running one, a scale-up of the GPU group with no pod pending, and says
// why in the status. When demand falls back, no room is held. Off, the
// demand is not read.
func TestForecastHoldsWarmRoomAheadOfTheHPA(t *testing.T) {
	a := newAutoscaler(t, forecasting(true))
	s := cpuAndGPUGroups(t)
	var plan autoscaler.Plan
	for i := 0; i < 12; i++ {
		v := min(16, 4*float64(i+1))
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(i) * 15 * time.Second), Snapshot: s, Demand: []forecast.Demand{llmDemand(v, 1)}})
	}
	f := plan.Status.Forecasts
	if len(f) != 1 || f[0].Buffer != "forecast-llm" || f[0].Replicas < 2 || f[0].Replicas != f[0].ForecastReplicas-1 ||
		f[0].Running != 1 || !strings.Contains(f[0].Message, "1 running") {
		t.Fatalf("forecasts %+v, want serving/llm holding the replicas 16 requests ask for beyond the running one", f)
	}
	if got, want := summary(plan), "scale-up gpu+"; !strings.HasPrefix(got, want) {
		t.Errorf("plan %q, want the GPU group grown for the warm room", got)
	}
	if len(plan.Status.Buffers) != 1 || plan.Status.Buffers[0].Key() != "serving/forecast-llm" || plan.Status.Buffers[0].ScaleUp == 0 {
		t.Errorf("buffers %+v, want the forecast's own buffer on the scale-up", plan.Status.Buffers)
	}
	if plan.NextDecisionAt.IsZero() || plan.NextDecisionAt.After(t0.Add(165*time.Second+forecast.DefaultOptions().Interval)) {
		t.Errorf("next decision %s: want the next demand reading due within the interval", plan.NextDecisionAt)
	}

	// Demand gone: the forecast falls below the running replica.
	a = newAutoscaler(t, forecasting(true))
	for i := 0; i < 3; i++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(i) * 15 * time.Second), Snapshot: s, Demand: []forecast.Demand{llmDemand(0, 1)}})
	}
	if got := summary(plan); got != "" || plan.Status.Forecasts[0].Replicas != 0 {
		t.Errorf("no demand: plan %q, forecasts %+v; want nothing held", got, plan.Status.Forecasts)
	}

	off := newAutoscaler(t, forecasting(false))
	plan = step(t, off, autoscaler.Input{Now: t0, Snapshot: s, Demand: []forecast.Demand{llmDemand(16, 1)}})
	if got := summary(plan); got != "" || len(plan.Status.Forecasts) != 0 {
		t.Errorf("off: plan %q, forecasts %+v; want the demand ignored", got, plan.Status.Forecasts)
	}
}
