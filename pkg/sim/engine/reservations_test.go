package engine_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// A dear group with two reserved nodes and a cheap spot group, under two
// one-GPU Jobs of two hours, then two more. The price expander grows the
// reserved group (its two nodes are paid for) rather than the cheap one,
// each time; the reservation is billed for the whole run, used or not.
const reservedBatch = `
name: reserved-batch
seed: 1
duration: 4h
provisioningDelay: 2m
devicePluginDelay: 0s
autoscaler: {expander: price, scale-down-unneeded-time: 5m}
nodeGroups:
- name: a-spot
  maxSize: 8
  pricePerHour: 1
  spot: true
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
- name: b-reserved
  maxSize: 8
  pricePerHour: 3
  reservedNodes: 2
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: train
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  jobs: [{at: 0s, count: 2, duration: 1h}, {at: 2h, count: 2, duration: 1h}]
`

func TestReservedNodesAreUsedFirstAndBilledWhole(t *testing.T) {
	res := run(t, parse(t, reservedBatch))
	byID := map[string]int{}
	for i, g := range res.Groups {
		byID[g.ID] = i
	}
	spot, reserved := res.Groups[byID["a-spot"]], res.Groups[byID["b-reserved"]]
	t.Logf("spot %+v; reserved %+v; cost $%.2f", spot, reserved, res.Cost)
	if reserved.PeakNodes != 2 || reserved.Added != 4 || spot.Added != 0 {
		t.Errorf("reserved %d nodes added (peak %d), spot %d: want the reserved nodes used for both batches and no spot node",
			reserved.Added, reserved.PeakNodes, spot.Added)
	}
	if want := 2 * 3 * res.Duration.Hours(); math.Abs(reserved.Cost-want) > 1e-9 {
		t.Errorf("reserved group cost $%.4f over %.2f node-hours, want $%.4f: two reserved nodes billed for the whole run",
			reserved.Cost, reserved.NodeHours, want)
	}
	if reserved.NodeHours >= 2*res.Duration.Hours() {
		t.Errorf("reserved group ran %.2f node-hours, want fewer than the run: its nodes are removed once idle", reserved.NodeHours)
	}
}

// Four pods at once: the two that fit the reservation go there, the two
// left over to the cheap spot group in the next loop.
func TestReservedNodesFirstThenTheCheapest(t *testing.T) {
	res := run(t, parse(t, strings.Replace(reservedBatch, "count: 2, duration: 1h}, {at: 2h", "count: 4, duration: 1h}, {at: 2h", 1)))
	peak := map[string]int{}
	for _, g := range res.Groups {
		peak[g.ID] = g.PeakNodes
	}
	if peak["b-reserved"] != 2 || peak["a-spot"] != 2 {
		t.Errorf("peak nodes %v: want the two reserved nodes used and the two other pods on spot", peak)
	}
}

func TestReservedNodesBeyondMaxSizeAreRefused(t *testing.T) {
	_, err := scenario.Parse([]byte(strings.Replace(reservedBatch, "reservedNodes: 2", "reservedNodes: 9", 1)))
	if err == nil || !strings.Contains(err.Error(), "reservedNodes") || !strings.Contains(err.Error(), "got 9") {
		t.Errorf("error %v, want reservedNodes named with its value", err)
	}
}
