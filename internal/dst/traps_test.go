package dst

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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

// The Lease passes while a drain waits for a pod it evicted (one that
// takes 4 minutes to stop): after the eviction, before the pod is gone.
func TestTakeoverWhileDrainingDeposesAWaitingDrain(t *testing.T) {
	res := Run(1, drainSchedule(StepTakeoverWhileDraining), emptyStart())
	for _, v := range res.Violations {
		t.Error(v)
	}
	_, lead := handOver(t, res.History, "autoscaler-1", "autoscaler-2")
	var evicted Event
	for _, e := range res.History.Events {
		if e.Instance == "autoscaler-1" && e.Resource == "pods/eviction" && e.Result == "ok" {
			evicted = e
		}
	}
	if evicted.Instance == "" {
		t.Fatal("autoscaler-1 evicted nothing")
	}
	if wait := lead.At.Sub(evicted.At); wait < 0 || wait >= 4*time.Minute {
		t.Errorf("the takeover came %s after the eviction, want within the pod's 4 minutes of grace", wait)
	}
}

// A node deleted while its pod terminates loses the pod with it, unless
// the pod's grace period is over (the kubelet model ends such pods only at
// the next tick).
func TestPodPastItsGraceIsNotLostWithItsNode(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		lost  bool
	}{
		{"within its grace period", 239 * time.Second, true},
		{"past its grace period", 240 * time.Second, false},
	} {
		clk := newSimClock(epoch)
		h := &History{}
		w := newWorld(clk, h)
		cloud := newCloud(w, emptyStart().World)
		cloud.addRegistered("cpu")
		w.addWorkload("w1", WorkloadSlowStop, 1, false)
		w.schedule()
		w.deleteWorkload("w1")
		clk.fireNext(epoch.Add(c.after)) // nothing waits: the clock moves there
		node := w.nodes()[0]
		if err := cloud.delete("a", "cpu", []*v1.Node{node}); err != nil {
			t.Fatal(err)
		}
		got := NoPodLostWithItsNode(h, 0)
		if (len(got) > 0) != c.lost {
			t.Errorf("%s: %q, want lost=%v", c.name, got, c.lost)
		}
	}
}
