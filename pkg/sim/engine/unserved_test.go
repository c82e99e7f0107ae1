package engine_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestEvictedPodsWaitAgain: under LeastAllocated one of the two Job pods is
// evicted when scale-down drains its node. Its second wait is counted (three
// waits for two pods), it waited nothing the second time (the other node
// had room), and the run it had behind it is reported.
func TestEvictedPodsWaitAgain(t *testing.T) {
	res := run(t, parse(t, fmt.Sprintf(twoNodes, scenario.LeastAllocated)))
	if res.Evictions != 1 || len(res.Waits) != res.Submitted+res.Evictions {
		t.Fatalf("%d evictions, %d waits for %d pods; want every wait counted", res.Evictions, len(res.Waits), res.Submitted)
	}
	if res.EvictionWaitHours != 0 {
		t.Errorf("evicted pod waited %.3fh, want 0 (the other node had room)", res.EvictionWaitHours)
	}
	if res.InterruptedHours <= 0 || res.InterruptedHours > 0.5 || res.InterruptedGPUHours != 0 {
		t.Errorf("interrupted run %.3f pod-h (%.3f GPU-h), want the few minutes the pod ran before its node went",
			res.InterruptedHours, res.InterruptedGPUHours)
	}
}

const capped = `
name: capped
duration: 90m
provisioningDelay: 2m
nodeGroups:
- name: cpu
  maxSize: 1
  pricePerHour: 1
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: batch
  pod: {requests: {cpu: "2"}}
  jobs: [{at: 0s, count: 3, duration: 1h}]
- name: huge
  pod: {requests: {cpu: "8"}}
  jobs: [{at: 0s, duration: 1h}]
`

// TestUnservedDemandAndLimits: a group of at most one 4-cpu node and three
// 2-cpu Jobs of an hour, plus an 8-cpu Job that fits no node, over 90
// minutes. The node comes at 2m and runs two Jobs to 62m; the third waits
// for them (the group's max size holds it back from 2m, when the node it
// was asked for arrived, to 62m) and has run
// 28 of the 60 minutes the bounds count for it when the run ends (32
// unserved); the huge Job never runs (60 minutes). Unserved: 92 pod-minutes
// of the 240 demanded.
func TestUnservedDemandAndLimits(t *testing.T) {
	res := run(t, parse(t, capped))
	u := res.Unserved
	if !near(u.JobPodHours, 92.0/60) || !near(u.PodHours, 92.0/60) || u.ReplicaPodHours != 0 || u.GPUHours != 0 {
		t.Errorf("unserved %+v, want 92 pod-minutes of Jobs, no GPU", u)
	}
	if !near(u.DemandPodHours, 4) || !near(u.Share(), 92.0/240) {
		t.Errorf("demand %.3f pod-h, share %.3f; want 4 and 92/240", u.DemandPodHours, u.Share())
	}
	if res.Unscheduled != 1 || res.PendingAtEnd != 1 {
		t.Errorf("never scheduled %d, pending at the end %d; want the huge Job in both", res.Unscheduled, res.PendingAtEnd)
	}
	want := []engine.LimitHit{{Limit: "node group cpu max size 1", First: 2 * time.Minute, For: time.Hour}}
	if len(res.LimitsReached) != 1 || res.LimitsReached[0] != want[0] {
		t.Errorf("limits reached %+v, want %+v (the huge Job fits no node, so no limit holds it back)", res.LimitsReached, want)
	}
}

// TestClusterLimitReached: --max-nodes-total 1 holds the third Job back
// although the group could grow.
func TestClusterLimitReached(t *testing.T) {
	s := parse(t, capped)
	s.NodeGroups[0].MaxSize = 3
	s.Workloads = s.Workloads[:1]
	res := run(t, s, func(o *engine.Options) { o.Autoscaler.Limits.MaxNodesTotal = 1 })
	if len(res.LimitsReached) != 1 || res.LimitsReached[0].Limit != "--max-nodes-total" {
		t.Errorf("limits reached %+v, want --max-nodes-total", res.LimitsReached)
	}
}

// TestUnservedReplicas: in the walkthrough the HPA asks for a second GPU
// replica at 5m; it waits 3 minutes for its node (ordered at 5m, registered
// at 7m, GPUs at 8m). The bounds count it from 5m: 3 replica-minutes, 3
// GPU-minutes unserved, and no limit reached.
func TestUnservedReplicas(t *testing.T) {
	res := run(t, builtin(t, "seed-walkthrough"))
	u := res.Unserved
	if !near(u.ReplicaPodHours, 0.05) || !near(u.ReplicaGPUHours, 0.05) || u.JobPodHours != 0 {
		t.Errorf("unserved %+v, want 0.05 replica-hours and GPU-hours", u)
	}
	if len(res.LimitsReached) != 0 {
		t.Errorf("limits reached %+v, want none", res.LimitsReached)
	}
}

// TestEvictedReplicaIsNotTakenForAPendingOne: a two-replica Deployment
// spread over two nodes; scale-down drains one, its replica is replaced on
// the other node at once. The evicted replica ran: it neither waits again
// (a wait as long as its age) nor leaves the pending count (which would go
// negative and hide unserved demand for the rest of the run).
func TestEvictedReplicaIsNotTakenForAPendingOne(t *testing.T) {
	res := run(t, parse(t, `name: replicas
scheduler: {scoring: LeastAllocated}
duration: 2h
nodeGroups:
- {name: g, maxSize: 2, initialSize: 2, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}}
workloads:
- {name: web, pod: {requests: {cpu: "1"}}, deployment: {replicas: 2}}
`))
	if res.Evictions != 1 || res.NodesRemoved != 1 {
		t.Fatalf("%d evictions, %d nodes removed; want one node drained", res.Evictions, res.NodesRemoved)
	}
	if u := res.Unserved; u.ReplicaPodHours != 0 || u.PodHours != 0 {
		t.Errorf("unserved %+v, want none: every replica ran all along but for the moment of its eviction", u)
	}
	if p := res.WaitPercentile(100); p > time.Minute {
		t.Errorf("longest wait %s, want the evicted replica's replacement placed at once, no wait as long as its age", p)
	}
	if last := res.Series.Pending[len(res.Series.Pending)-1]; last != 0 {
		t.Errorf("%d pods pending at the end", last)
	}
}
