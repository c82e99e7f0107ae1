package engine_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

const servingOneReplica = `
name: serving-one
duration: 10m
provisioningDelay: 1m
devicePluginDelay: 30s
nodeGroups:
- name: h100
  minSize: 1
  maxSize: 3
  pricePerHour: 4
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: llm
  pod: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
  deployment:
    replicas: 1
    readyAfter: 30s
    serving:
      gpu: H100
      model: 8B
      requests: [{at: 0s, input: 3079, output: 1}, {at: 60s, input: 3079, output: 1}]
`

// One replica on a node that is there from the start: the request that
// arrives while the model loads waits for it; the one after is served at
// once. Its GPU counts for the whole run, idle but for the two prefills.
func TestServingOneReplicaByHand(t *testing.T) {
	res := run(t, parse(t, servingOneReplica))
	if len(res.Serving) != 1 {
		t.Fatalf("%d serving results, want 1", len(res.Serving))
	}
	p, err := serving.Lookup("H100", "8B")
	if err != nil {
		t.Fatal(err)
	}
	prefill := 3079 / p.PrefillTokensPerSecond
	s := res.Serving[0]
	if s.Requests != 2 || s.Served != 2 || !approx(s.TTFTP50, prefill) || !approx(s.TTFTP99, 30+prefill) || s.SLOAttainment != 0.5 {
		t.Errorf("summary %+v: want TTFTs %.4f and %.4f, half within the 2s SLO", s.Summary, prefill, 30+prefill)
	}
	if !approx(s.GPUHours, 600.0/3600) || !approx(s.IdleGPUHours, (600-2*prefill)/3600) {
		t.Errorf("GPU-hours %g (idle %g), want %g (idle %g)", s.GPUHours, s.IdleGPUHours, 600.0/3600, (600-2*prefill)/3600)
	}
	if want := 2 * prefill / 3600; !approx(s.WorkGPUHours, want) {
		t.Errorf("work %g GPU-hours, want %g", s.WorkGPUHours, want)
	}
}

// A queue-depth HPA adds a replica for a burst; the new replica needs a new
// node, so it serves only after boot (1m) + device plugin (30s) + model
// load (30s), and the run holds more GPU time than one replica.
func TestServingScalesOnQueueDepth(t *testing.T) {
	y := strings.Replace(servingOneReplica, "      requests: [{at: 0s, input: 3079, output: 1}, {at: 60s, input: 3079, output: 1}]\n", burst(), 1) + `
    hpa:
      minReplicas: 1
      maxReplicas: 3
      metrics: [{type: Pods, pods: {metric: {name: queue_depth}, target: {type: AverageValue, averageValue: "2"}}}]
`
	res := run(t, parse(t, y))
	s := res.Serving[0]
	// Skipped autoscaler loops change nothing a serving Deployment feels.
	if every := run(t, parse(t, y), func(o *engine.Options) { o.EveryLoop = true }); every.Serving[0] != s {
		t.Errorf("with every loop %+v, skipping %+v", every.Serving[0], s)
	}
	t.Logf("%+v, %d HPA changes, %d nodes added", s, res.HPAChanges, res.NodesAdded)
	if res.HPAChanges == 0 || res.NodesAdded == 0 {
		t.Fatalf("the HPA changed replicas %d times, %d nodes added: want a scale-up", res.HPAChanges, res.NodesAdded)
	}
	if s.GPUHours <= 600.0/3600+1e-9 {
		t.Errorf("%g GPU-hours: want more than one replica's %g", s.GPUHours, 600.0/3600)
	}
	// The bound's demand is the requests' work, not the replicas asked
	// for: at most the work's GPU-hours, and more than nothing.
	demanded := 0.0
	for _, c := range res.PodDemand {
		demanded -= float64(c.Delta) * c.At.Hours() // a step's area, replica-hours
	}
	if demanded <= 0 || demanded > s.WorkGPUHours+1e-9 {
		t.Errorf("the bound counts %g replica-hours, want some and at most the work's %g", demanded, s.WorkGPUHours)
	}
	if res.Unserved.ReplicaPodHours != 0 {
		t.Errorf("%g replica pod-hours unserved: a serving Deployment's demand is its work, not its replicas", res.Unserved.ReplicaPodHours)
	}
	if s.Served != s.Requests || math.IsInf(s.TTFTP99, 1) {
		t.Errorf("summary %+v: want every request served", s.Summary)
	}
	// The series shows the queue the HPA read and the replicas serving.
	peakWaiting, peakReady := 0, 0
	for i := range res.Series.Times {
		peakWaiting, peakReady = max(peakWaiting, res.Series.Waiting[i][0]), max(peakReady, res.Series.ServingReady[i][0])
	}
	if len(res.Series.Serving) != 1 || peakWaiting < 2 || peakReady < 2 {
		t.Errorf("series %v: peak %d waiting, %d serving; want a queue and a second replica", res.Series.Serving, peakWaiting, peakReady)
	}
}

// burst is 400 requests a second apart from 60s, each long enough to
// keep one replica's KV cache full.
func burst() string {
	var b strings.Builder
	b.WriteString("      requests:\n")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "      - {at: %ds, input: 30000, output: 2000}\n", 60+i)
	}
	return b.String()
}
