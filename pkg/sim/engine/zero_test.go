package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// A model with one replica and an empty queue, on an empty GPU group: the
// HPA (minReplicas 0, External metric: the queue, AverageValue 10 per
// replica)
// takes it to 0 once its 2-minute scale-down window has passed, at 2m, and
// so holds ScaledToZero. 25 requests queue from 5m: 0 -> 3 at the 5m sync
// (ceil(25/10), within the scale-up policies' 4 pods). From 20m the queue
// is empty: back to 0 when the last recommendation of 3 (the last sync
// before 20m) leaves the window, at 21m45s to 22m, and every node goes after
// its unneeded time.
const modelAtZero = `
name: model-at-zero
seed: 1
duration: 45m
sampleInterval: 10s
provisioningDelay: 2m
devicePluginDelay: 1m
nodeGroups:
- name: gpu
  maxSize: 4
  pricePerHour: 1
  capacity: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
workloads:
- name: llama
  pod:
    requests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: "1"}
  deployment:
    replicas: 1
    readyAfter: 10s
    hpa:
      minReplicas: 0
      maxReplicas: 4
      metrics:
      - type: External
        external:
          metric: {name: vllm_requests_waiting}
          target: {type: AverageValue, averageValue: "10"}
      behavior:
        scaleDown: {stabilizationWindowSeconds: 120}
    load:
      capacityPerPod: 10
      points:
      - {at: 0s, value: 0}
      - {at: 5m, value: 25}
      - {at: 20m, value: 0}
`

func TestScaleToZeroInTheSimulator(t *testing.T) {
	res := run(t, parse(t, modelAtZero))
	replicas := func(i int) int { return res.Series.Replicas[i][0] }
	nodes := func(i int) int { return res.Series.Nodes[i][0] }
	for _, c := range []struct {
		what      string
		series    func(int) int
		from      time.Duration
		wantAt    time.Duration
		wantValue int
	}{
		{"replicas 1 -> 0 after the window", replicas, 0, 2 * time.Minute, 0},
		{"replicas 0 -> 3 when the queue fills", replicas, 2 * time.Minute, 5 * time.Minute, 3},
	} {
		gotAt, gotValue := firstChange(res, c.series, c.from)
		if gotAt != c.wantAt || gotValue != c.wantValue {
			t.Errorf("%s: changed to %d at %s, want %d at %s", c.what, gotValue, gotAt, c.wantValue, c.wantAt)
		}
	}
	if at, v := firstChange(res, replicas, 10*time.Minute); v != 0 || at < 21*time.Minute+45*time.Second || at > 22*time.Minute {
		t.Errorf("back to %d at %s, want 0 between 21m45s and 22m", v, at)
	}
	if last := len(res.Series.Times) - 1; nodes(last) != 0 || res.HPAChanges != 3 {
		t.Errorf("at the end %d nodes and %d HPA changes, want 0 nodes and 3 changes", nodes(last), res.HPAChanges)
	}

	// A Deployment that starts at 0 was not put there by the HPA: as the
	// controller does, the model leaves it at 0 whatever the queue.
	idle := parse(t, strings.Replace(modelAtZero, "    replicas: 1\n", "    replicas: 0\n", 1))
	if res := run(t, idle); res.HPAChanges != 0 {
		t.Errorf("a Deployment created at 0: %d HPA changes, want 0", res.HPAChanges)
	}
}

func TestScaleToZeroNeedsAnExternalMetric(t *testing.T) {
	y := strings.Replace(modelAtZero, `      - type: External
        external:
          metric: {name: vllm_requests_waiting}
          target: {type: AverageValue, averageValue: "10"}`, `      - type: Pods
        pods:
          metric: {name: gpu_utilization}
          target: {type: AverageValue, averageValue: "30"}`, 1)
	_, err := scenario.Parse([]byte(y))
	if err == nil || !strings.Contains(err.Error(), "workloads[0].deployment.hpa.minReplicas: 0 (scale to zero) needs an External metric") {
		t.Fatalf("error = %v", err)
	}
}
