package engine_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// forecastCount counts the loops that reported a forecast, and those that
// held warm replicas.
type forecastCount struct{ forecasts, held int }

func (c *forecastCount) Record(_ autoscaler.Input, plan autoscaler.Plan) {
	for _, f := range plan.Status.Forecasts {
		c.forecasts++
		if f.Replicas > 0 {
			c.held++
		}
	}
}

// rampingModel serves 2,000-token prompts at a rate that steps up at 5m
// and again at 12m, scaled on requests in flight.
const rampingModel = `
name: ramping-model
seed: 1
duration: 30m
sampleInterval: 15s
provisioningDelay: 60s
devicePluginDelay: 30s
hpaSyncPeriod: 15s
autoscaler:
  scale-down-unneeded-time: 2m
nodeGroups:
- name: h100-1
  initialSize: 1
  maxSize: 8
  pricePerHour: 6.98
  capacity: {cpu: "26", memory: 234Gi, nvidia.com/gpu: "1"}
workloads:
- name: llm
  pod:
    requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
  deployment:
    replicas: 1
    readyAfter: 30s
    serving:
      gpu: H100
      model: 8B
      startAt: 1m
      bursts:
      - {at: 2m, for: 3m, every: 2s, input: 2000, output: 200}
      - {at: 5m, for: 7m, every: 500ms, input: 2000, output: 200}
      - {at: 12m, for: 10m, every: 200ms, input: 2000, output: 200}
    hpa:
      minReplicas: 1
      maxReplicas: 8
      metrics:
      - type: External
        external:
          metric: {name: requests_in_flight}
          target: {type: AverageValue, averageValue: "4"}
`

// With forecast buffers the simulator reports the HPA's demand to the
// core, which buys warm nodes ahead of the replicas: more GPU-hours are
// provisioned than the replicas hold, and the status names the buffer.
func TestForecastBuffersWarmNodesAheadOfTheHPA(t *testing.T) {
	off := run(t, parse(t, rampingModel))
	rec := &forecastCount{}
	on := run(t, parse(t, rampingModel), func(o *engine.Options) {
		o.Autoscaler.Forecast.Enabled = true
		o.Recorder = rec
	})
	t.Logf("provisioned GPU-hours %.2f -> %.2f; TTFT p90 %.3f -> %.3f s; forecasts seen %d",
		off.GPUHoursProvisioned, on.GPUHoursProvisioned, off.Serving[0].TTFTP90, on.Serving[0].TTFTP90, rec.forecasts)
	if !(on.GPUHoursProvisioned > off.GPUHoursProvisioned) {
		t.Errorf("provisioned %.2f GPU-hours with forecast buffers, %.2f without: want warm nodes bought ahead", on.GPUHoursProvisioned, off.GPUHoursProvisioned)
	}
	if rec.forecasts == 0 || rec.held == 0 {
		t.Errorf("%d loops reported a forecast, %d held warm replicas: want the demand read and room held", rec.forecasts, rec.held)
	}
}
