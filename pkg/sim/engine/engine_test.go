package engine_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// The seed walkthrough, step by step: stress at 5m makes the one pod 100%
// busy (target 30), the HPA asks for 2 replicas at once (up: no
// stabilization); the second pod is pending, so the loop at 5m orders a
// node; it registers at 7m (provisioning 2m) and advertises its GPU at 8m
// (device plugin 1m), when the pod binds: a 3m wait. Stress stops at 20m;
// with 2 pods at 0 the HPA wants 1 but its 5-minute scale-down window holds
// 2 until 25m. The newest pod goes, its node is empty from 25m and removed
// after the 10m unneeded time, at 35m.
// Cost: node 1 runs 50m, node 2 is billed from its request at 5m to 35m:
// 80 node-minutes at $1.006/h = $1.341333.
func TestSeedWalkthrough(t *testing.T) {
	s, err := scenario.Builtin("seed-walkthrough")
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, s)
	replicas := func(i int) int { return res.Series.Replicas[i][0] }
	nodes := func(i int) int { return res.Series.Nodes[i][0] }
	pending := func(i int) int { return res.Series.Pending[i] }
	for _, c := range []struct {
		what      string
		series    func(int) int
		from      time.Duration
		wantAt    time.Duration
		wantValue int
	}{
		{"replicas 1 -> 2", replicas, 0, 5 * time.Minute, 2},
		{"nodes 1 -> 2", nodes, 0, 5 * time.Minute, 2},
		{"second pod pending until its GPU is advertised", pending, 5 * time.Minute, 8 * time.Minute, 0},
		{"replicas 2 -> 1 after the stabilization window", replicas, 10 * time.Minute, 25 * time.Minute, 1},
		{"node removed after the unneeded time", nodes, 10 * time.Minute, 35 * time.Minute, 1},
	} {
		gotAt, gotValue := firstChange(res, c.series, c.from)
		if gotAt != c.wantAt || gotValue != c.wantValue {
			t.Errorf("%s: changed to %d at %s, want %d at %s", c.what, gotValue, gotAt, c.wantValue, c.wantAt)
		}
	}
	if !approx(res.Cost, 1.006*80/60) {
		t.Errorf("cost $%.6f, want $%.6f (80 node-minutes at $1.006/h)", res.Cost, 1.006*80/60)
	}
	if res.WaitPercentile(100) != 3*time.Minute || res.HPAChanges != 2 || res.ScaleUps != 1 || res.NodesRemoved != 1 {
		t.Errorf("max wait %s, HPA changes %d, scale-ups %d, removals %d; want 3m, 2, 1, 1",
			res.WaitPercentile(100), res.HPAChanges, res.ScaleUps, res.NodesRemoved)
	}
	// The bound's demand in pods: the Deployment (workload 0) starts at one
	// replica, its HPA adds one at 5m and takes it back at 25m.
	want := []bound.PodChange{{At: 0, Class: 0, Delta: 1}, {At: 5 * time.Minute, Class: 0, Delta: 1},
		{At: 25 * time.Minute, Class: 0, Delta: -1}}
	if !reflect.DeepEqual(res.PodDemand, want) {
		t.Errorf("pod demand %+v, want %+v", res.PodDemand, want)
	}
}

const threeJobs = `
name: three-jobs
provisioningDelay: 2m
nodeGroups:
- name: cpu
  maxSize: 5
  pricePerHour: 1
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: batch
  pod: {requests: {cpu: "2"}}
  jobs: [{at: 0s, count: 3, duration: 1h}]
`

// Three 2-cpu Jobs at 0 on an empty group of 4-cpu nodes at $1/h. The loop
// at 0 orders 2 nodes (two pods fit a node); they register at 2m and the
// pods start: each waited 2m. They finish at 62m, both nodes are unneeded
// from the loop at 62m and are removed at 72m. Cost: 2 nodes billed from
// 0 to 72m = 2.4 node-hours = $2.40. Lower-bound demand: 6 cpu for 1h.
func TestThreeJobsByHand(t *testing.T) {
	res := run(t, parse(t, threeJobs))
	if !approx(res.Cost, 2.4) || !approx(res.NodeHours, 2.4) {
		t.Errorf("cost $%.4f over %.4f node-hours, want $2.40 over 2.4", res.Cost, res.NodeHours)
	}
	for _, w := range res.Waits {
		if w != 2*time.Minute {
			t.Errorf("waits %v, want 2m each", res.Waits)
			break
		}
	}
	if res.Duration != 72*time.Minute || res.Finished != 3 || res.NodesAdded != 2 || res.NodesRemoved != 2 {
		t.Errorf("ran %s, finished %d, added %d, removed %d; want 72m, 3, 2, 2",
			res.Duration, res.Finished, res.NodesAdded, res.NodesRemoved)
	}
	if len(res.Demand) != 6 {
		t.Errorf("demand changes %v, want a start and an end per Job", res.Demand)
	}
	want := []bound.PodChange{{At: 0, Class: 0, Delta: 1}, {At: time.Hour, Class: 0, Delta: -1}}
	if len(res.PodDemand) != 6 || !reflect.DeepEqual(res.PodDemand[:2], want) {
		t.Errorf("pod demand %+v, want %+v three times", res.PodDemand, want)
	}
}

// The same input and seed give the same result, field by field.
func TestDeterministicReplay(t *testing.T) {
	for _, name := range []string{"seed-walkthrough", "azure-llm-serving"} {
		s, err := scenario.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		a, b := run(t, s), run(t, s)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs with seed %d differ", name, s.Seed)
		}
	}
}

// Skipping autoscaler loops and HPA syncs in which nothing can change gives
// the result of running them all; only the loop count differs.
func TestSkippedLoopsChangeNothing(t *testing.T) {
	day := builtin(t, scenario.SyntheticDayName)
	day.Duration = metav1Duration(2 * time.Hour)
	day.Workloads = append(day.Workloads[:2], day.Workloads[24:]...) // two web, four inference Deployments, Jobs
	for _, s := range []*scenario.Scenario{parse(t, threeJobs), builtin(t, "seed-walkthrough"), builtin(t, "azure-llm-serving"), day} {
		every := run(t, s, func(o *engine.Options) { o.EveryLoop = true })
		skip := run(t, s)
		if skip.Loops >= every.Loops {
			t.Errorf("%s: %d loops with skipping, %d without; want fewer", s.Name, skip.Loops, every.Loops)
		}
		every.Loops, skip.Loops = 0, 0
		if !reflect.DeepEqual(every, skip) {
			t.Errorf("%s: skipping loops changed the result:\nevery loop %+v\nskipping   %+v", s.Name, summary(every), summary(skip))
		}
	}
}

func builtin(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func summary(r *engine.Result) []any {
	return []any{r.Cost, r.Duration, r.ScaleUps, r.NodesAdded, r.NodesRemoved, r.HPAChanges, r.Waits}
}

const twoNodes = `
name: scoring
scheduler: {scoring: %s}
duration: 30m
nodeGroups:
- name: cpu
  maxSize: 2
  initialSize: 2
  pricePerHour: 1
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: a
  pod: {requests: {cpu: "1", memory: 1Gi}}
  jobs: [{at: 0s, duration: 2h}]
- name: b
  pod: {requests: {cpu: "1", memory: 1Gi}}
  jobs: [{at: 1m, duration: 2h}]
`

// LeastAllocated spreads the second pod to the empty node, so scale-down
// must drain one of the two quarter-used nodes (one eviction); MostAllocated
// packs it next to the first and the other node goes empty (none).
func TestScoringStrategies(t *testing.T) {
	for _, c := range []struct {
		scoring   string
		evictions int
	}{{scenario.LeastAllocated, 1}, {scenario.MostAllocated, 0}} {
		res := run(t, parse(t, fmt.Sprintf(twoNodes, c.scoring)))
		if res.Evictions != c.evictions || res.NodesRemoved != 1 {
			t.Errorf("%s: %d evictions, %d nodes removed; want %d and 1", c.scoring, res.Evictions, res.NodesRemoved, c.evictions)
		}
		if res.Series.Pending[len(res.Series.Pending)-1] != 0 {
			t.Errorf("%s: an evicted pod found no new node", c.scoring)
		}
	}
}
