package scenario_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// FuzzParse feeds the scenario reader arbitrary documents. It must never
// panic, and a scenario it accepts must validate again and start in the
// engine: a scenario refused only once it runs is a validation gap.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("builtin", "*.yaml"))
	examples, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "sim", "*.yaml"))
	for _, path := range append(seeds, examples...) {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"name: m\nnodeGroups: [{name: cpu, maxSize: 3, pricePerHour: 0.5, capacity: {cpu: \"4\", memory: 16Gi}}]\nworkloads: [{name: w, pod: {requests: {cpu: \"1\"}}, jobs: [{at: 1m, duration: 10m}]}]\n",
		"name: m\nnodeGroups: [{name: g, maxSize: 1, pricePerHour: 1, capacity: {cpu: 1, memory: 1Gi, nvidia.com/gpu: \"0.5\"}}]\nworkloads: []\n",
		"name: m\nduration: 1h\nnodeGroups: [{name: g, maxSize: 1, pricePerHour: 1, capacity: {cpu: 1, memory: 1Gi}}]\nworkloads: [{name: d, pod: {requests: {cpu: 100m}}, deployment: {replicas: 1, load: {capacityPerPod: 1, points: [{at: 0s, value: 1}]}}}]\n",
		"", "null", "name: x\n", "{",
		// Sizes past the limits, and values no field holds.
		"name: m\nnodeGroups: [{name: cpu, maxSize: 3, pricePerHour: 0.5, capacity: {cpu: \"4\", memory: 16Gi}}]\nworkloads: [{name: w, pod: {requests: {cpu: \"1\"}}, jobs: [{at: 1m, duration: 10m, count: 100000000}]}]\n",
		"name: m\nnodeGroups: [{name: cpu, minSize: 100000000, maxSize: 100000000, pricePerHour: 0.5, capacity: {cpu: \"4\", memory: 16Gi}}]\nworkloads: []\n",
		"name: m\nsampleInterval: 1ns\nnodeGroups: [{name: cpu, maxSize: 3, pricePerHour: .nan, capacity: {cpu: \"4\", memory: 16Gi}}]\nworkloads: []\n",
		"name: m\nduration: 1h\nnodeGroups: [{name: g, maxSize: 1, pricePerHour: 1, capacity: {cpu: 1, memory: 1Gi}}]\nworkloads: [{name: d, pod: {requests: {cpu: 100m}}, deployment: {replicas: 2000000000, load: {capacityPerPod: 1, points: [{at: 0s, value: 1}]}}}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenario.Parse(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
		if s.SampleInterval.Duration < scenario.MinSampleInterval {
			t.Fatalf("accepted sampleInterval %s", s.SampleInterval.Duration)
		}
		for _, g := range s.NodeGroups {
			if g.MaxSize > scenario.MaxGroupSize {
				t.Fatalf("accepted maxSize %d", g.MaxSize)
			}
		}
		for _, w := range s.Workloads {
			for _, b := range w.Jobs {
				if b.Count > scenario.MaxJobCount {
					t.Fatalf("accepted a batch of %d pods", b.Count)
				}
			}
			if d := w.Deployment; d != nil && (d.Replicas > scenario.MaxReplicas || d.HPA != nil && d.HPA.MaxReplicas > scenario.MaxReplicas) {
				t.Fatalf("accepted %d replicas", d.Replicas)
			}
		}
		pods := 0
		for i := range s.Workloads {
			pods += s.Workloads[i].PodCount()
		}
		nodes := 0
		for _, g := range s.NodeGroups {
			nodes += *g.InitialSize
		}
		if pods > 5000 || nodes > 5000 {
			return // valid, but too big to start in a fuzz run
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o, err := engine.OptionsFor(s)
		if err != nil {
			t.Fatalf("accepted scenario has settings the flag parser refuses: %v", err)
		}
		// Build the engine, then stop at the first turn of the run.
		o.Progress = func(time.Duration, time.Duration) { cancel() }
		if res, err := engine.RunContext(ctx, o); res == nil {
			t.Fatalf("accepted scenario does not start: %v", err)
		}
	})
}
