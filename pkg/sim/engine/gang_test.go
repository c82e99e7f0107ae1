package engine_test

import (
	"fmt"
	"testing"
	"time"
)

// gangScenario: one job of 4 pods, each asking for a whole 8-GPU node, on
// a group whose max is maxSize; ProvisioningRequests on or off.
func gangScenario(maxSize int, requests bool) string {
	return fmt.Sprintf(`
name: gang
provisioningDelay: 3m
nodeGroups:
- name: gpu
  maxSize: %d
  pricePerHour: 10
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}
autoscaler:
  enable-provisioning-requests: %t
workloads:
- name: train
  pod: {requests: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
  jobs: [{at: 1m, count: 4, gang: 4, duration: 2h}]
`, maxSize, requests)
}

// A 4-pod job gets 4 nodes and starts once they are all there, whether it
// asks through a ProvisioningRequest or not; through one, the 4 nodes come
// in one scale-up.
func TestGangStartsWhenAllFit(t *testing.T) {
	for _, requests := range []bool{true, false} {
		res := run(t, parse(t, gangScenario(10, requests)))
		g := res.Gangs
		if g.Jobs != 1 || g.NeverStarted != 0 || len(g.Waits) != 1 {
			t.Fatalf("requests %t: gangs %+v, want the one job started", requests, g)
		}
		if w := g.Waits[0]; w < 3*time.Minute || w > 5*time.Minute {
			t.Errorf("requests %t: gang waited %s, want about the 3m provisioning delay", requests, w)
		}
		if res.NodesAdded != 4 || res.Finished != 4 {
			t.Errorf("requests %t: %d nodes added, %d pods finished; want 4 and 4", requests, res.NodesAdded, res.Finished)
		}
		if requests && (res.ScaleUps != 1 || g.Requests != 1) {
			t.Errorf("with a request: %d scale-ups, %d requests; want 1 and 1", res.ScaleUps, g.Requests)
		}
	}
}

// With room for only 3 of the 4 nodes, the job through a request adds no
// node at all; without a request the autoscaler adds the 3 nodes the
// pending pods fit, and they sit idle: the job never starts either way.
func TestGangAllOrNothingWhenMaxTooSmall(t *testing.T) {
	with := parse(t, gangScenario(3, true))
	with.Duration.Duration = 2 * time.Hour
	res := run(t, with)
	if res.Gangs.NeverStarted != 1 || res.NodesAdded != 0 || res.NodeHours != 0 {
		t.Errorf("with a request: %+v, %d nodes added, %.1f node-hours; want no node and the job waiting",
			res.Gangs, res.NodesAdded, res.NodeHours)
	}
	without := parse(t, gangScenario(3, false))
	without.Duration.Duration = 2 * time.Hour
	res = run(t, without)
	if res.Gangs.NeverStarted != 1 || res.NodesAdded != 3 || res.NodeHours < 5 {
		t.Errorf("without a request: %+v, %d nodes added, %.1f node-hours; want 3 idle nodes",
			res.Gangs, res.NodesAdded, res.NodeHours)
	}
}

// A job due after the run stops is not counted: neither as a job nor as
// one that never started, and no wait is negative.
func TestGangDueAfterTheEndIsNotCounted(t *testing.T) {
	s := parse(t, gangScenario(10, false))
	s.Duration.Duration = 30 * time.Second // the job is due at 1m
	res := run(t, s)
	if g := res.Gangs; g.Jobs != 0 || g.NeverStarted != 0 || len(g.Waits) != 0 {
		t.Errorf("gangs %+v, want none: the only job was due after the end", g)
	}
	for _, w := range res.Gangs.Waits {
		if w < 0 {
			t.Errorf("negative gang wait %s", w)
		}
	}
}
