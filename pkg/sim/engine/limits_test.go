package engine_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// A run stops soon after its context is done and returns what it measured
// up to the virtual time reached.
func TestRunContextStopsWithAPartialResult(t *testing.T) {
	s, err := scenario.Builtin("seed-walkthrough")
	if err != nil {
		t.Fatal(err)
	}
	full := run(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	o.EveryLoop = true
	var stoppedAt time.Duration
	o.Progress = func(now, end time.Duration) {
		if stoppedAt == 0 && now >= full.Duration/3 {
			stoppedAt = now
			cancel() // as a SIGINT does
		}
	}
	res, err := engine.RunContext(ctx, o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped at virtual time") {
		t.Fatalf("err = %v, want an interruption", err)
	}
	if res == nil || res.Stopped == "" || !strings.Contains(res.Stopped, "interrupted") {
		t.Fatalf("result %+v, want a partial result saying it was interrupted", res)
	}
	// The loop notices within a turn: the result ends where it stopped,
	// well before the full run's end.
	if res.Duration < stoppedAt || res.Duration >= full.Duration || res.Duration > stoppedAt+time.Minute {
		t.Errorf("partial run covers %s; stopped at %s of %s", res.Duration, stoppedAt, full.Duration)
	}
	if n := len(res.Series.Times); n == 0 || res.Series.Times[n-1] > res.Duration {
		t.Errorf("series %v goes past the partial run's %s", res.Series.Times, res.Duration)
	}
	if res.Cost <= 0 || res.Cost >= full.Cost {
		t.Errorf("partial cost $%.2f, want some of the full run's $%.2f", res.Cost, full.Cost)
	}
}

func TestRunRefusesMoreVirtualTimeThanAllowed(t *testing.T) {
	s := parse(t, threeJobs) // no duration: runs until its Jobs are done
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxVirtualTime = 30 * time.Minute
	_, err = engine.RunContext(context.Background(), o)
	var le *engine.LimitError
	if !errors.As(err, &le) || le.Option != "MaxVirtualTime" || le.Limit != "30m0s" || !strings.Contains(err.Error(), "last Job would end at") {
		t.Errorf("err = %v, want a MaxVirtualTime refusal naming the last Job's end", err)
	}
	o.MaxVirtualTime = 400 * 24 * time.Hour
	if _, err := engine.RunContext(context.Background(), o); err != nil {
		t.Errorf("within the bound: %v", err)
	}
}

func TestRunStopsOverItsMemoryBound(t *testing.T) {
	s, err := scenario.Builtin("seed-walkthrough")
	if err != nil {
		t.Fatal(err)
	}
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	o.EveryLoop = true
	o.MaxMemory = 1 // any process holds more
	res, err := engine.RunContext(context.Background(), o)
	var le *engine.LimitError
	if !errors.As(err, &le) || le.Option != "MaxMemory" {
		t.Fatalf("err = %v, want a MaxMemory stop", err)
	}
	if res == nil || !strings.Contains(res.Stopped, "MaxMemory") || res.Duration <= 0 {
		t.Errorf("result %+v, want a partial one saying why", res)
	}
}

// A scenario that asks for more pods than fit in memory is refused while
// its pods are made, not after the machine runs out.
func TestRunRefusesMorePodsThanFitInMemory(t *testing.T) {
	s := parse(t, `name: many
nodeGroups:
- name: cpu
  maxSize: 3
  pricePerHour: 0.5
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: w
  pod: {requests: {cpu: "1"}}
  jobs: [{at: 1m, duration: 10m, count: 100000}]
`)
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxMemory = 1 // any process holds more
	_, err = engine.RunContext(context.Background(), o)
	var le *engine.LimitError
	if !errors.As(err, &le) || le.Option != "MaxMemory" || !strings.Contains(err.Error(), "workloads[0] has submitted") {
		t.Fatalf("err = %v, want a MaxMemory refusal while the pods are made", err)
	}
}

// Starting a group of n nodes costs in proportion to n: four times the
// nodes may allocate about four times the memory (up to 8 times, for the
// loop's own work), never the sixteen times that counting the group's nodes
// at every add cost. Bytes allocated are counted rather than time taken,
// which a busy machine makes noisy.
func TestStartingAGroupIsLinearInItsSize(t *testing.T) {
	start := func(nodes int) uint64 {
		s := parse(t, fmt.Sprintf(`name: big
duration: 1m
nodeGroups:
- name: cpu
  minSize: %d
  maxSize: %d
  pricePerHour: 1
  capacity: {cpu: "8", memory: 32Gi}
workloads:
- name: w
  jobs: [{at: 1m, count: 1, duration: 1m}]
  pod: {requests: {cpu: "1"}}
`, nodes, nodes))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := run(t, s)
		runtime.ReadMemStats(&after)
		if res.Groups[0].PeakNodes != nodes {
			t.Fatalf("peak %d nodes, want %d", res.Groups[0].PeakNodes, nodes)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := start(2000), start(8000)
	ratio := float64(large) / float64(small)
	t.Logf("2,000 nodes: %d MB allocated, 8,000: %d MB (%.1f times)", small>>20, large>>20, ratio)
	if ratio > 8 {
		t.Errorf("8,000 nodes allocated %.1f times what 2,000 did", ratio)
	}
}

// A signal during start-up stops it there: a scenario of a hundred
// thousand initial nodes is not built before the interruption is seen.
func TestStartUpStopsWithTheContext(t *testing.T) {
	s := parse(t, `name: big
duration: 1h
nodeGroups:
- {name: g, minSize: 100000, maxSize: 100000, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}}
`)
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as a SIGINT before the run begins
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = engine.RunContext(ctx, o)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while starting node group g (0 of 100000 nodes added)") {
		t.Fatalf("err = %v, want start-up interrupted, naming how far it got", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d MiB before stopping, want the nodes never built", grew>>20)
	}
}
