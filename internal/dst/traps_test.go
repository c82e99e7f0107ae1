package dst

import (
	"testing"
	"time"
)

// emptyStart are the default options on a cluster with no node at the
// start.
func emptyStart() Options {
	o := DefaultOptions()
	o.World.StartNodes, o.StartWorkloads = nil, nil
	return o
}

// trapSchedule grows a node for one pod, lets the pod finish, and arms
// trap before the empty node's removal.
func trapSchedule(trap StepKind, workload WorkloadKind) []Step {
	steps := []Step{
		{Kind: StepAddWorkload, Workload: workload, Replicas: 1},
		{Kind: StepSchedule},
		{Kind: StepTick, Dur: 30 * time.Second},
		{Kind: StepRegister},
		{Kind: StepSchedule},
		{Kind: StepFinishPod},
		{Kind: trap},
	}
	for range 8 {
		steps = append(steps, Step{Kind: StepTick, Dur: 30 * time.Second})
	}
	return steps
}

func drainSchedule(trap StepKind) []Step {
	steps := []Step{
		{Kind: StepAddWorkload, Workload: WorkloadSlowStop, Replicas: 1},
		{Kind: StepSchedule},
		{Kind: StepTick, Dur: 30 * time.Second},
		{Kind: StepRegister},
		{Kind: StepSchedule},
		{Kind: StepAddWorkload, Workload: WorkloadPlain, Replicas: 1, GPU: true},
		{Kind: StepSchedule},
		{Kind: StepTick, Dur: 30 * time.Second},
		{Kind: StepRegister},
		{Kind: StepSchedule},
		{Kind: trap},
	}
	for range 12 {
		steps = append(steps, Step{Kind: StepTick, Dur: 30 * time.Second})
	}
	return steps
}

// handOver is the last event of instance id before the new leader
// started, and the new leader's start; it fails unless both are there
// and id makes no call after.
func handOver(t *testing.T, h *History, id, next string) (Event, Event) {
	t.Helper()
	var last, lead Event
	for _, e := range h.Events {
		switch {
		case e.Kind == EventLeading && e.Instance == next:
			lead = e
		case e.Instance == id && lead.Instance != "":
			t.Errorf("%s acted after %s took over: %s", id, next, e)
		case e.Instance == id:
			last = e
		}
	}
	if lead.Instance == "" || last.Instance == "" {
		t.Fatalf("no hand-over from %s to %s in the history", id, next)
	}
	return last, lead
}

// The process dies as its taint lands, before any drain: the next one
// starts then and cleans the taint up.
func TestKillAfterTaintKillsBetweenTaintAndDrain(t *testing.T) {
	res := Run(1, trapSchedule(StepKillAfterTaint, WorkloadPlain), emptyStart())
	for _, v := range res.Violations {
		t.Error(v)
	}
	last, lead := handOver(t, res.History, "autoscaler-1", "autoscaler-2")
	if last.Kind != EventAPIWrite || last.Resource != "nodes" || !last.At.Equal(lead.At) {
		t.Errorf("the last call before the crash was %s, want the taint of a node, at %s", last, lead.At)
	}
}

// The Lease passes as a drain starts waiting for a pod it evicted (one
// that takes 4 minutes to stop).
func TestTakeoverWhileDrainingDeposesAWaitingDrain(t *testing.T) {
	res := Run(1, drainSchedule(StepTakeoverWhileDraining), emptyStart())
	for _, v := range res.Violations {
		t.Error(v)
	}
	last, lead := handOver(t, res.History, "autoscaler-1", "autoscaler-2")
	if last.Resource != "pods/eviction" || !last.At.Equal(lead.At) {
		t.Errorf("the last call before the takeover was %s, want an eviction, at %s", last, lead.At)
	}
}
