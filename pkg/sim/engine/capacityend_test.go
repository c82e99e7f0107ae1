package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// A cheap group backed by a capacity block of two reserved one-GPU nodes
// that ends at 3h, and a dearer on-demand group. A replica and a 4-hour
// Job start on the block (its nodes are paid for).
const capacityBlock = `
name: capacity-block
seed: 1
duration: 7h
provisioningDelay: 3m
devicePluginDelay: 0s
autoscaler: {expander: price, scale-down-unneeded-time: 5m}
nodeGroups:
- name: block
  maxSize: 2
  pricePerHour: 2
  reservedNodes: 2
  capacityBlockEnd: 3h
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
- name: on-demand
  maxSize: 4
  pricePerHour: 4
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: serve
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  deployment: {replicas: 1}
- name: train
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  jobs: [{at: 0s, count: 1, duration: 4h}]
`

func groupResult(t *testing.T, res *engine.Result, id string) engine.GroupResult {
	t.Helper()
	for _, g := range res.Groups {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("no group %s in %+v", id, res.Groups)
	return engine.GroupResult{}
}

// The autoscaler drains the block's nodes within its lead, so the cloud
// takes none back with pods on it; with the lead off it takes both,
// killing what runs there. Either way the block is billed for its two
// nodes until its end and no longer.
func TestCapacityBlockIsLeftBeforeTheCloudTakesIt(t *testing.T) {
	handled := run(t, parse(t, capacityBlock))
	off := run(t, parse(t, capacityBlock), func(o *engine.Options) { o.Autoscaler.Interruption.CapacityBlockLead = 0 })
	t.Logf("handled %+v; lead off %+v", handled.CapacityEnds, off.CapacityEnds)
	if b := groupResult(t, handled, "block"); handled.CapacityEnds.Reclaimed != 0 || b.Removed != 2 {
		t.Errorf("with the lead: %d nodes taken back, %d block nodes removed; want the two block nodes drained and removed first",
			handled.CapacityEnds.Reclaimed, b.Removed)
	}
	if off.CapacityEnds.Reclaimed != 2 {
		t.Errorf("lead off: %d nodes taken back, want the two block nodes taken with their pods", off.CapacityEnds.Reclaimed)
	}
	for name, res := range map[string]*engine.Result{"handled": handled, "lead off": off} {
		if b := groupResult(t, res, "block"); !approx(b.Cost, 2*2*3) || b.Added != 2 {
			t.Errorf("%s: block cost $%.4f, %d nodes added; want two reserved nodes billed for the 3h of the block, none added",
				name, b.Cost, b.Added)
		}
		if res.Finished != 1 || res.PendingAtEnd != 0 {
			t.Errorf("%s: %d Jobs finished, %d pods pending at the end; want the Job done elsewhere", name, res.Finished, res.PendingAtEnd)
		}
		// The Job ran about 2h20m-2h30m on the block before it left: that
		// run is done again.
		if l := res.CapacityEnds.LostPodHours; l < 2.2 || l > 2.5 {
			t.Errorf("%s: %.2f pod-hours lost, want the Job's run on the block", name, l)
		}
	}
}

// Pods that arrive after the cloud began terminating the block go to the
// other group: the block launches nothing more.
func TestCapacityBlockLaunchesNothingAtItsEnd(t *testing.T) {
	sc := parse(t, strings.Replace(capacityBlock, "jobs: [{at: 0s, count: 1, duration: 4h}]",
		"jobs: [{at: 0s, count: 1, duration: 4h}, {at: 2h50m, count: 2, duration: 1h}]", 1))
	res := run(t, sc, func(o *engine.Options) { o.Autoscaler.Interruption.CapacityBlockLead = 0 })
	if b := groupResult(t, res, "block"); b.Added != 2 {
		t.Errorf("block added %d nodes, want only its first two", b.Added)
	}
	if res.Finished != 3 || res.PendingAtEnd != 0 {
		t.Errorf("%d Jobs finished, %d pending; want all three done on demand", res.Finished, res.PendingAtEnd)
	}
}

// A job of two 8-GPU pods asks for queued capacity: the flex-start group
// grants both nodes 20 minutes after the request, and the job starts when
// they have booted; a plain pod is never placed on the queued group.
const queuedCapacity = `
name: queued
seed: 1
duration: 6h
provisioningDelay: 3m
devicePluginDelay: 0s
autoscaler: {expander: price, enable-provisioning-requests: true}
nodeGroups:
- name: flex
  maxSize: 4
  pricePerHour: 5
  queuedProvisioning: true
  queuedDelay: 20m
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}
- name: on-demand
  maxSize: 4
  pricePerHour: 10
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}
workloads:
- name: train
  pod: {requests: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
  provisioningClass: queued-provisioning.gke.io
  maxRunDuration: 3h
  jobs: [{at: 1m, count: 2, gang: 2, duration: 2h}]
- name: other
  pod: {requests: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
  jobs: [{at: 1m, count: 1, duration: 1h}]
`

func TestQueuedRequestIsGrantedWhole(t *testing.T) {
	res := run(t, parse(t, queuedCapacity))
	flex, od := groupResult(t, res, "flex"), groupResult(t, res, "on-demand")
	if res.QueuedRequests != 1 || flex.Added != 2 || od.Added != 1 {
		t.Errorf("%d queued requests, flex added %d, on-demand %d: want one request granting both job nodes, the plain pod on demand",
			res.QueuedRequests, flex.Added, od.Added)
	}
	if g := res.Gangs; g.NeverStarted != 0 || len(g.Waits) != 1 || g.Waits[0] != 23*time.Minute {
		t.Errorf("gangs %+v: want the job started after the 20m queue and the 3m boot", g)
	}
	if res.CapacityEnds.Reclaimed != 0 || res.Finished != 3 {
		t.Errorf("%d nodes taken back, %d finished: want the 2h job done within its 3h run", res.CapacityEnds.Reclaimed, res.Finished)
	}
}

// The cloud deletes the request's nodes at the end of their run duration,
// with the job still on them: its run is lost and done again elsewhere.
func TestQueuedNodesGoAtTheirRunsEnd(t *testing.T) {
	res := run(t, parse(t, strings.Replace(queuedCapacity, "maxRunDuration: 3h", "maxRunDuration: 1h", 1)))
	if c := res.CapacityEnds; c.Reclaimed != 2 || !approx(c.LostPodHours, 2*57.0/60) {
		t.Errorf("capacity ends %+v: want both nodes taken back after 1h (57m after they booted), both pods' runs lost", c)
	}
	if res.Finished != 3 || res.PendingAtEnd != 0 {
		t.Errorf("%d finished, %d pending: want the job run again on demand", res.Finished, res.PendingAtEnd)
	}
}

// A stockout holds the queue: the request is granted when it ends.
func TestQueuedRequestWaitsOutAStockout(t *testing.T) {
	res := run(t, parse(t, strings.Replace(queuedCapacity, "queuedDelay: 20m", "queuedDelay: 20m\n  stockouts: [{from: 0s, to: 2h}]", 1)))
	if g := res.Gangs; len(g.Waits) != 1 || g.Waits[0] != 2*time.Hour+2*time.Minute {
		t.Errorf("gangs %+v: want the job started 3m after the stockout ended at 2h", g)
	}
}
