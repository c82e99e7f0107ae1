package dst

import (
	"testing"
	"time"
)

// Replays of the schedules the search found, shrunk; each failed before
// its fix.

// TestReplayRegisteredInstanceNotDeleted replays a schedule (seed 2,
// shrunk) that broke NoPodLostWithItsNode: with the node watch stalled,
// the cache never showed the node an instance registered as, and the loop
// deleted the instance as unregistered, with the three pods bound to it.
// Fixed by reading the nodes from the API server before such a deletion.
func TestReplayRegisteredInstanceNotDeleted(t *testing.T) {
	steps := []Step{
		{Kind: StepAddWorkload, Workload: WorkloadPlain, Replicas: 3, GPU: true},
		{Kind: StepSchedule},
		{Kind: StepHoldWatch, Resource: "nodes"},
		{Kind: StepTick, Dur: 40 * time.Second},
		{Kind: StepRegister, Pick: 15},
		{Kind: StepTick, Dur: 26 * time.Second},
		{Kind: StepSchedule},
		{Kind: StepTick, Dur: 16 * time.Second},
		{Kind: StepTick, Dur: 54 * time.Second},
		{Kind: StepTick, Dur: 4 * time.Second},
		{Kind: StepTick, Dur: 26 * time.Second},
		{Kind: StepTick, Dur: 18 * time.Second},
	}
	for _, v := range Run(2, steps, DefaultOptions()).Violations {
		t.Error(v)
	}
}

// TestReplayAbortedRemovalDoesNotSpin replays a schedule (seed 4, shrunk)
// that broke Settles: with the pod watch stalled, the cache showed a node
// emptier than it was; every loop planned its removal, the re-check
// called it off, and the outcome woke the next loop at once, without end
// (taint, untaint, at the speed of the API server). Fixed by letting
// outcomes wake one loop a second at most, as pending pods do.
func TestReplayAbortedRemovalDoesNotSpin(t *testing.T) {
	steps := []Step{
		{Kind: StepAddWorkload, Workload: WorkloadGraceful, Replicas: 3},
		{Kind: StepAddWorkload, Workload: WorkloadDoNotDisrupt, Replicas: 1, GPU: true},
		{Kind: StepSchedule},
		{Kind: StepDeleteWorkload, Pick: 12},
		{Kind: StepTick, Dur: 6 * time.Second},
		{Kind: StepHoldWatch, Resource: "pods"},
		{Kind: StepRegister, Pick: 14},
		{Kind: StepDeleteWorkload, Pick: 1},
		{Kind: StepAddWorkload, Workload: WorkloadGraceful, Replicas: 1},
		{Kind: StepKill},
		{Kind: StepTick, Dur: 44 * time.Second},
		{Kind: StepHoldWatch, Resource: "nodes"},
		{Kind: StepSchedule},
		{Kind: StepTick, Dur: 36 * time.Second},
	}
	o := DefaultOptions()
	o.Settle = 5 * time.Second
	for _, v := range Run(4, steps, o).Violations {
		t.Error(v)
	}
}

// TestReplayScaleUpForPodsALaggingCacheShows replays a schedule (seed 109,
// shrunk) that broke ScaleUpWithinNeed as first written: the pods were
// deleted while the pod watch was held, and the loop ordered a node for
// pods its cache still showed. That is the latitude of every autoscaler
// that reads a cache; the invariant now grants it (World.waitingAsSeen),
// and the replay keeps it granted.
func TestReplayScaleUpForPodsALaggingCacheShows(t *testing.T) {
	steps := []Step{
		{Kind: StepAddWorkload, Workload: WorkloadBudget, Replicas: 3},
		{Kind: StepSchedule},
		{Kind: StepHoldWatch, Resource: "pods"},
		{Kind: StepDeleteWorkload, Pick: 3},
		{Kind: StepTick, Dur: 4 * time.Second},
	}
	for _, v := range Run(109, steps, DefaultOptions()).Violations {
		t.Error(v)
	}
}
