package engine_test

import (
	"testing"
	"time"
)

// A stockout: the cheap group cannot create its node; the cloud says so a
// minute later, the core backs the group off, gives its target back and
// turns to the dear group, as the live shell does with a capacity error.
func TestStockoutFallsBackToTheNextGroup(t *testing.T) {
	s := parse(t, `name: stockout
duration: 30m
autoscaler: {expander: price}
nodeGroups:
- {name: cheap, maxSize: 2, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}, stockouts: [{from: 0s, to: 1h}]}
- {name: dear, maxSize: 2, pricePerHour: 3, capacity: {cpu: "4", memory: 16Gi}}
workloads:
- {name: job, pod: {requests: {cpu: "3"}}, jobs: [{at: 0s, duration: 10m}]}
`)
	res := run(t, s)
	byName := map[string]int{}
	for _, g := range res.Groups {
		byName[g.ID] = g.Added
	}
	if byName["cheap"] != 0 || byName["dear"] != 1 || res.Unscheduled != 0 {
		t.Fatalf("nodes added %v, unscheduled %d; want the dear group's one node and the job run", byName, res.Unscheduled)
	}
	// Asked of cheap at 0, reported failed at 1m, dear asked at 1m,
	// registered at 3m.
	if w := res.WaitPercentile(100); w != 3*time.Minute {
		t.Errorf("wait %s, want 3m (1m to learn of the stockout, 2m to provision)", w)
	}
}

// A node being removed is billed until it is gone, and no pod is placed
// on it meanwhile.
func TestNodeDeletionDelay(t *testing.T) {
	yaml := func(delay string) string {
		return `name: deletion
duration: 1h
nodeDeletionDelay: ` + delay + `
nodeGroups:
- {name: g, maxSize: 2, initialSize: 2, pricePerHour: 6, capacity: {cpu: "4", memory: 16Gi}}
workloads:
- {name: w, pod: {requests: {cpu: "1"}}, deployment: {replicas: 1}}
`
	}
	at0, at5 := run(t, parse(t, yaml("0s"))), run(t, parse(t, yaml("5m")))
	// One node is empty from the start: removed at 10m, gone at 10m or 15m.
	if d := at5.Cost - at0.Cost; !approx(d, 6*5.0/60) {
		t.Errorf("cost %.4f vs %.4f: the 5m deletion should bill 5 more node-minutes ($0.50), got %.4f", at5.Cost, at0.Cost, d)
	}
	if at0.NodesRemoved != 1 || at5.NodesRemoved != 1 || at5.Evictions != 0 {
		t.Errorf("removed %d and %d, evictions %d; want 1, 1, 0", at0.NodesRemoved, at5.NodesRemoved, at5.Evictions)
	}
}

// DaemonSets take room on every node and the core counts them on
// templates: a 4-cpu node would hold two 1.6-cpu pods, but with a 1-cpu
// DaemonSet only one, so the two pods need two nodes, ordered at once.
func TestDaemonSetsTakeRoom(t *testing.T) {
	s := parse(t, `name: ds
duration: 30m
daemonSets:
- {name: agent, pod: {requests: {cpu: "1"}}}
nodeGroups:
- {name: g, maxSize: 4, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}}
workloads:
- {name: job, pod: {requests: {cpu: "1600m"}}, jobs: [{at: 0s, count: 2, duration: 10m}]}
`)
	res := run(t, s)
	if res.NodesAdded != 2 || res.ScaleUps != 1 || res.Unscheduled != 0 {
		t.Errorf("nodes added %d in %d scale-ups, unscheduled %d; want 2 in 1 (the DaemonSet counted on the template)",
			res.NodesAdded, res.ScaleUps, res.Unscheduled)
	}
}

// A PodDisruptionBudget that allows no disruption keeps a half-used node:
// the two pods of the Deployment are never both down, so its nodes stay.
func TestPodDisruptionBudgetKeepsNodes(t *testing.T) {
	yaml := func(pdb string) string {
		return `name: pdb
duration: 2h
nodeGroups:
- {name: g, maxSize: 3, initialSize: 2, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}}
workloads:
- {name: w, pod: {requests: {cpu: "1"}}, deployment: {replicas: 2}` + pdb + `}
`
	}
	// LeastAllocated spreads the two pods over both nodes; without a
	// budget one node is drained into the other.
	free := run(t, parse(t, yaml("")))
	held := run(t, parse(t, yaml(", pdb: {minAvailable: 2}")))
	if free.NodesRemoved != 1 || held.NodesRemoved != 0 {
		t.Errorf("removed %d without a budget and %d with minAvailable 2; want 1 and 0", free.NodesRemoved, held.NodesRemoved)
	}
}
