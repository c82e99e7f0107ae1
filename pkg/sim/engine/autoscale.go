package engine

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/pending"
)

// loop runs the node autoscaler once, as the live shell does: the core
// gets the snapshot, the pending pods, the DaemonSets, the
// PodDisruptionBudgets and what became of earlier actions; its actions are
// carried out through the same actuation.Carry, by simActuator.
func (e *Engine) loop() error {
	e.pace.lastLoop = e.now
	e.rec.loops++
	tried := make([]*v1.Pod, len(e.work.pending))
	for i, p := range e.work.pending {
		tried[i] = p.pi.Pod
	}
	// The simulated scheduler tried every queued pod: they are all marked
	// unschedulable; pods of schedulers the autoscaler does not act for
	// are left alone, as live.
	sel := pending.SelectTried(tried, e.opts.Autoscaler.Pending)
	in := autoscaler.Input{Now: clock(e.now), Snapshot: e.snap, Pending: sel.Pods, OtherSchedulers: sel.OtherSchedulers,
		DaemonSets: e.work.daemonSets, PDBs: e.pdbs(), Replicas: e.replicas(), Outcomes: e.outcomes, ProvisioningRequests: e.requestInput(),
		CapacityBuffers: e.bufferInput(), Demand: e.demandInput()}
	e.outcomes = nil
	plan, err := e.auto.Step(in)
	if err != nil {
		return err
	}
	if e.opts.Recorder != nil {
		e.opts.Recorder.Record(in, plan)
	}
	e.rec.noteConsolidation(plan.Status.Consolidation)
	before := e.pace.changed
	res := actuation.Carry(context.Background(), simActuator{e}, virtualClock{e}, plan.Actions)
	if len(res.Errors) > 0 {
		return fmt.Errorf("carrying out the plan: %w", res.Errors[0])
	}
	e.outcomes = append(e.outcomes, res.Outcomes...)
	acted := e.pace.changed != before
	e.pace.nextLoop = e.now + e.opts.ScanInterval
	if !acted && !e.opts.EveryLoop {
		e.pace.nextLoop = e.pace.wake(e.now, plan.NextDecisionAt)
	}
	return nil
}

// virtualClock is the engine's time for actuation.Carry.
type virtualClock struct{ e *Engine }

func (c virtualClock) Now() time.Time                  { return clock(c.e.now) }
func (c virtualClock) Since(t time.Time) time.Duration { return clock(c.e.now).Sub(t) }
