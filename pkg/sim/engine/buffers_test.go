package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// A CapacityBuffer of one GPU chunk: with pod injection on, a GPU node is
// up before any pod asks for it, the Job arriving at 30m starts at once
// on it, and the buffer grows the group again for its own room; without,
// the Job waits for a node to boot.
const warmGPU = `
name: warm-gpu
seed: 1
duration: 1h
provisioningDelay: 3m
devicePluginDelay: 0s
autoscaler: {scale-down-unneeded-time: 5m}
nodeGroups:
- name: gpu
  maxSize: 4
  pricePerHour: 2
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: infer
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  jobs: [{at: 30m, count: 1, duration: 10m}]
capacityBuffers:
- name: warm
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  replicas: 1
`

func TestCapacityBufferKeepsAWarmGPUNode(t *testing.T) {
	gpusAt := func(res *engine.Result, at time.Duration) int64 {
		var n int64
		for i, x := range res.Series.Times {
			if x <= at {
				n = res.Series.GPUsProvisioned[i]
			}
		}
		return n
	}
	on := run(t, parse(t, warmGPU), func(o *engine.Options) { o.Autoscaler.CapacityBuffers.PodInjectionEnabled = true })
	off := run(t, parse(t, warmGPU))
	if g := gpusAt(on, 25*time.Minute); g != 1 {
		t.Errorf("with the buffer: %d GPUs provisioned at 25m, want the 1 warm node", g)
	}
	if g := gpusAt(off, 25*time.Minute); g != 0 {
		t.Errorf("without the buffer: %d GPUs provisioned at 25m, want none", g)
	}
	if w := on.WaitPercentile(100); w != 0 {
		t.Errorf("with the buffer the Job waited %s, want 0 (the warm node takes it)", w)
	}
	if w := off.WaitPercentile(100); w < 3*time.Minute {
		t.Errorf("without the buffer the Job waited %s, want at least the 3m boot", w)
	}
	if g := gpusAt(on, 35*time.Minute); g != 2 {
		t.Errorf("with the buffer: %d GPUs at 35m, want 2 (the Job's node and the buffer's again)", g)
	}
}

func TestCapacityBufferScenarioErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{"  replicas: 1\n  workload: infer\n", "capacityBuffers[0]: set one of pod and workload"},
		{"  replicas: -1\n", "capacityBuffers[0]: spec.replicas: must not be negative, got -1"},
		{"  percentage: 10\n", "capacityBuffers[0]: spec.percentage: 10 needs spec.scalableRef"},
		{"  workload: infer\n  percentage: 10\n", "capacityBuffers[0]: set one of pod and workload"},
		{"  percentage: 10\n  workload: infer\n", "capacityBuffers[0]: set one of pod and workload"},
	} {
		base := warmGPU[:strings.Index(warmGPU, "  replicas: 1\n")]
		_, err := scenario.Parse([]byte(base + c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.edit, err, c.want)
		}
	}
}

// A buffer borrowing a Jobs workload is refused: only a Deployment has
// replicas to take a percentage of.
func TestCapacityBufferOfAWorkloadNeedsADeployment(t *testing.T) {
	base := warmGPU[:strings.Index(warmGPU, "- name: warm\n")]
	_, err := scenario.Parse([]byte(base + "- name: warm\n  workload: infer\n  percentage: 50\n"))
	if want := "capacityBuffers[0]: spec.scalableRef: Deployment default/infer not found"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
