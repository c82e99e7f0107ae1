package engine_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// A cheap spot group interrupted about twice per node-hour and a dearer
// on-demand group, under a batch of GPU Jobs. With interruption handling
// (the default signals), each interrupted node is drained and removed
// within its notice (none is still there when the cloud reclaims it), the
// pods' replacement is ordered at once and the spot group is priced by its
// interruptions; without it (interruption-taint=none, today's behaviour)
// every interrupted node runs to the end of its notice and is reclaimed.
// Both runs lose the runs of the displaced Jobs; the handled run serves
// more of the demand.
const spotBatch = `
name: spot-batch
seed: 3
duration: 6h
provisioningDelay: 3m
devicePluginDelay: 0s
interruptionNotice: 2m
autoscaler: {expander: price, scale-down-unneeded-time: 5m}
nodeGroups:
- name: a-spot
  maxSize: 8
  pricePerHour: 1
  spot: true
  instanceType: p5.48xlarge
  zone: us-east-1a
  interruptionsPerHour: 2
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
- name: b-on-demand
  maxSize: 8
  pricePerHour: 3
  instanceType: p5.48xlarge
  zone: us-east-1a
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: train
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  jobs: [{at: 0s, count: 6, duration: 2h}, {at: 2h, count: 6, duration: 2h}]
`

func TestInterruptionsAreDrainedWithinTheNotice(t *testing.T) {
	sc := parse(t, spotBatch)
	handled := run(t, sc)
	today := run(t, parse(t, spotBatch), func(o *engine.Options) { o.Autoscaler.Interruption.Signals = nil })
	for _, r := range []struct {
		name string
		res  *engine.Result
	}{{"handled", handled}, {"today", today}} {
		i := r.res.Interruptions
		t.Logf("%s: %d interrupted, %d reclaimed, %.2f GPU-h lost, unserved %.2f pod-h, cost $%.2f",
			r.name, i.Nodes, i.Reclaimed, i.LostGPUHours, r.res.Unserved.PodHours, r.res.Cost)
		if i.Nodes == 0 || i.LostGPUHours <= 0 {
			t.Fatalf("%s: %+v: want interruptions that cost runs", r.name, i)
		}
	}
	if handled.Interruptions.Reclaimed != 0 {
		t.Errorf("handled: %d nodes reclaimed at the end of their notice, want every one drained before", handled.Interruptions.Reclaimed)
	}
	if today.Interruptions.Reclaimed != today.Interruptions.Nodes {
		t.Errorf("today: %d of %d interrupted nodes reclaimed, want all", today.Interruptions.Reclaimed, today.Interruptions.Nodes)
	}
	if handled.Unserved.PodHours >= today.Unserved.PodHours {
		t.Errorf("unserved pod-hours handled %.2f, today %.2f: want fewer with the handling", handled.Unserved.PodHours, today.Unserved.PodHours)
	}
}

// An interruption trace: at 1h the cloud interrupts two of the spot group's
// three nodes, the oldest first; handled, both are drained within the
// notice and their runs counted lost; a later entry asking for more nodes
// than are left takes what there is.
func TestInterruptionTrace(t *testing.T) {
	sc := parse(t, `
name: spot-trace
duration: 6h
provisioningDelay: 3m
devicePluginDelay: 0s
autoscaler: {expander: price}
nodeGroups:
- name: a-spot
  maxSize: 3
  initialSize: 3
  pricePerHour: 1
  spot: true
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
  interruptions: [{at: 1h, count: 2}, {at: 2h, count: 5}]
- name: b-on-demand
  maxSize: 8
  pricePerHour: 3
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: train
  pod: {requests: {cpu: "4", nvidia.com/gpu: "1"}}
  jobs: [{at: 0s, count: 3, duration: 3h}]
`)
	res := run(t, sc)
	i := res.Interruptions
	if i.Nodes != 3 || i.Reclaimed != 0 {
		t.Errorf("interruptions %+v: want 2 at 1h and the one left at 2h, none reclaimed before its drain", i)
	}
	if i.LostPodHours < 3.9 || i.LostPodHours > 4.1 {
		t.Errorf("work lost %.2f pod-h, want two runs of 1h and one of 2h", i.LostPodHours)
	}
	if res.Finished != 3 {
		t.Errorf("%d Jobs finished, want 3", res.Finished)
	}
}
