package engine

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// loop runs the node autoscaler once and carries its plan out the way the
// live shell does: shrinks, then scale-ups (recorded in the node-group
// state), then removals (drained at once: pods evicted, node deleted).
// Soft taints are not applied: PreferNoSchedule only changes scores the
// placement model does not compute.
func (e *Engine) loop() error {
	e.lastLoop = e.now
	e.rec.loops++
	pending := make([]*v1.Pod, len(e.pending))
	for i, p := range e.pending {
		pending[i] = p.pi.Pod
	}
	now := clock(e.now)
	plan, err := e.auto.RunOnce(autoscaler.Input{Now: now, Snapshot: e.snap, Pending: pending})
	if err != nil {
		return err
	}
	before := e.changed
	for _, s := range plan.ScaleUp.Shrinks {
		if err := e.cancelNodes(e.groupByID[s.Group], s.Delta); err != nil {
			return err
		}
	}
	for _, su := range plan.ScaleUp.ScaleUps {
		g := e.groupByID[su.Group]
		if g == nil {
			return fmt.Errorf("scale-up of unknown group %q", su.Group)
		}
		if err := e.requestNodes(g, su.Delta); err != nil {
			return err
		}
		e.auto.State().RecordScaleUp(su.Group, su.Delta, now)
		e.rec.scaleUps++
		e.touch()
	}
	for _, r := range plan.ScaleDown.Delete {
		ni := e.snap.Node(r.Node)
		if ni == nil {
			continue
		}
		for _, pi := range append(ni.Pods[:0:0], ni.Pods...) {
			p := e.pods[pi.Pod.Name]
			if p == nil {
				return fmt.Errorf("node %s holds unknown pod %s", r.Node, pi.Pod.Name)
			}
			if err := e.evict(p); err != nil {
				return err
			}
		}
		if err := e.removeNode(r.Node); err != nil {
			return err
		}
		e.auto.State().LastScaleDownDelete = now
		e.rec.scaleDowns++
	}
	acted := e.changed != before
	e.nextLoop = e.now + e.opts.ScanInterval
	if !acted && !e.opts.EveryLoop {
		e.nextLoop = e.wake(plan)
	}
	return nil
}

// wake is when the next loop can decide differently from this one if
// nothing else changes: the first scan tick at which one of the core's
// timers fires. Any change before then brings the loop forward (touch).
func (e *Engine) wake(plan autoscaler.Plan) time.Duration {
	at := never
	consider := func(t time.Time) {
		if d := t.Sub(Epoch); d > e.now && d < at {
			at = d
		}
	}
	now := clock(e.now)
	for _, u := range plan.ScaleDown.Unneeded {
		if u.Wait > 0 {
			consider(now.Add(u.Wait))
		}
	}
	if len(plan.ScaleDown.Unneeded) > 0 && !plan.ScaleDown.CooldownUntil.IsZero() {
		consider(plan.ScaleDown.CooldownUntil)
	}
	cs := e.opts.Autoscaler.ClusterState
	for _, g := range e.groups {
		for _, c := range g.inFlight {
			consider(clock(c.requested).Add(cs.MaxNodeProvisionTime))
		}
		if _, until, _ := e.auto.State().BackedOff(g.cfg.Name, now); !until.IsZero() {
			consider(until)
		}
	}
	for _, name := range plan.ScaleUp.AwaitingGPU {
		if ni := e.snap.Node(name); ni != nil {
			consider(ni.Node.CreationTimestamp.Add(cs.MaxNodeStartupTime))
		}
	}
	if d := e.opts.Autoscaler.ScaleUp.NewPodScaleUpDelay; d > 0 {
		for _, p := range e.pending {
			consider(clock(p.submit).Add(d))
		}
	}
	if at == never {
		return never
	}
	tick := e.ceilTick(at)
	if tick <= e.now {
		tick = e.now + e.opts.ScanInterval
	}
	return tick
}
