package engine_test

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// The run says what consolidation did: a node whose pods fit on the other
// is deleted though scale-down (threshold 10%) keeps it, with its eviction;
// and a pod that fits no group, pending all along, does not hold it.
func TestRunSaysWhatConsolidationDid(t *testing.T) {
	res := run(t, parse(t, `name: consolidate
scheduler: {scoring: LeastAllocated}
duration: 1h
nodeGroups:
- {name: g, maxSize: 3, initialSize: 2, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}}
autoscaler:
  consolidation: true
  scale-down-utilization-threshold: 0.1
workloads:
- {name: web, pod: {requests: {cpu: "1"}}, deployment: {replicas: 2}}
- name: huge
  pod: {requests: {cpu: "64"}}
  jobs: [{at: 0s, duration: 1h}]
`))
	c := res.Consolidation
	if !c.Enabled || c.Deletes != 1 || c.NodesRemoved != 1 || c.Evictions != 1 {
		t.Fatalf("consolidation %+v, want one delete of one node with one eviction", c)
	}
	if got := c.Summary(); !strings.Contains(got, "1 delete(s)") || !strings.Contains(got, "1 pod(s) evicted") {
		t.Errorf("summary %q", got)
	}
	if res.NodesRemoved != 1 {
		t.Errorf("%d nodes removed in all, want the one consolidation deleted", res.NodesRemoved)
	}
}

// With no move, the summary says why.
func TestConsolidationSummaryWithoutMoves(t *testing.T) {
	c := engine.ConsolidationResult{Enabled: true, Loops: 10, Held: map[string]int{"PodsWaitForCapacity": 6, "ScaleDownInCooldown": 2}}
	if got, want := c.Summary(), "no move: held in 8 of 10 loop(s) (PodsWaitForCapacity 6, ScaleDownInCooldown 2), none found in the others"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := (&engine.ConsolidationResult{}).Summary(); got != "off" {
		t.Errorf("off: %q", got)
	}
}
