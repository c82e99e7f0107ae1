package engine_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// Three models whose load comes and goes (examples/sim): scale to zero
// holds fewer GPU-hours, and fewer idle ones, than minReplicas 1 on the
// same metric, and every request is still served.
func TestScaleToZeroSavesGPUHoursAcrossModels(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "..", "..", "examples", "sim", "llm-multi-model-zero.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	total := func(policy string) (gpuHours, idle float64, models int) {
		p, err := s.WithPolicy(policy)
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, p)
		for _, r := range res.Serving {
			if r.Served != r.Requests || r.Requests == 0 {
				t.Errorf("%s: %s served %d of %d requests, want all", policy, r.Workload, r.Served, r.Requests)
			}
			gpuHours += r.GPUHours
			idle += r.IdleGPUHours
		}
		return gpuHours, idle, len(res.Serving)
	}
	zero, zeroIdle, n := total("scale-to-zero")
	one, oneIdle, _ := total("min-one")
	t.Logf("GPU-hours (idle): scale to zero %.2f (%.2f), minReplicas 1 %.2f (%.2f), over %d models", zero, zeroIdle, one, oneIdle, n)
	if n != 3 {
		t.Fatalf("%d serving Deployments, want the example's 3", n)
	}
	if !(zero < one) || !(zeroIdle < oneIdle) {
		t.Errorf("scale to zero holds %.2f GPU-hours (%.2f idle), minReplicas 1 %.2f (%.2f): want fewer of both", zero, zeroIdle, one, oneIdle)
	}
}

// oneModelAtZero goes to 0 after its 1-minute window; one request
// arrives at 20m, when no replica and no GPU node is left.
const oneModelAtZero = `
name: one-model-at-zero
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
  maxSize: 4
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
      bursts: [{at: 20m, for: 0s, every: 1s, input: 2000, output: 200}]
    hpa:
      minReplicas: %d
      maxReplicas: 2
      metrics:
      - type: External
        external:
          metric: {name: requests_in_flight}
          target: {type: AverageValue, averageValue: "8"}
      behavior:
        scaleDown: {stabilizationWindowSeconds: 60}
`

// The first request after zero waits for a node to boot, its device
// plugin and the model to load (the start-up), and at most one HPA sync
// and one autoscaler loop more; with minReplicas 1 it waits for nothing
// of the kind.
func TestFirstRequestAfterZeroWaitsTheStartUp(t *testing.T) {
	s := parse(t, fmt.Sprintf(oneModelAtZero, 0))
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	startUp := s.ProvisioningDelay.Duration + s.DevicePluginDelay.Duration + s.Workloads[0].Deployment.ReadyAfter.Duration
	slack := s.HPASyncPeriod.Duration + o.ScanInterval + 5*time.Second // the wait for a sync, a loop, and the prefill
	res := run(t, s)
	if len(res.Serving) != 1 || res.Serving[0].Requests != 1 {
		t.Fatalf("serving results %+v, want one request", res.Serving)
	}
	ttft := res.Serving[0].TTFTP50 // +Inf when it never had a first token
	if ttft < startUp.Seconds() || ttft > (startUp+slack).Seconds() {
		t.Errorf("the first request after zero waited %.1fs for its first token, want the start-up %s to %s", ttft, startUp, startUp+slack)
	}
	t.Logf("first token after zero: %.1fs (start-up %s)", ttft, startUp)

	warm := run(t, parse(t, fmt.Sprintf(oneModelAtZero, 1)))
	if got := warm.Serving[0].TTFTP50; got > warm.Serving[0].SLO {
		t.Errorf("with minReplicas 1 the request waited %.1fs, over the SLO of %.1fs", got, warm.Serving[0].SLO)
	}
}
