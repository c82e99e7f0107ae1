package engine

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Capacity bought for a time ends with it. A capacity block (a group's
// capacityBlockEnd) is billed for its reserved nodes until its end; the
// cloud starts terminating its instances autoscaler.CapacityBlockTermination
// before the end, killing what still runs there, and launches no more
// from then on. A queued request's nodes (queued.go) are deleted by the
// cloud when their run duration is over. The core drains a block's nodes
// ahead of its end (--capacity-block-drain-lead); a run's end it is not
// told of.
//
// Work lost: a Job pod displaced from such a node once its end is near
// (from the drain lead, or from the cloud's termination, whichever is
// first) restarts from scratch, as one displaced by an interruption.

// CapacityEndResult is what the end of bought capacity did to a run.
type CapacityEndResult struct {
	// Reclaimed counts the nodes still there when the cloud took them at
	// the end of their capacity block or run.
	Reclaimed int
	// LostPodHours and LostGPUHours are the runs of Job pods displaced
	// from such nodes near their end, done again from scratch.
	LostPodHours, LostGPUHours float64
}

// groupOptions are the options of g the core reads.
func (g *groupState) options() *snapshot.GroupOptions {
	var o snapshot.GroupOptions
	set := false
	if g.reserved > 0 {
		n := g.reserved
		o.ReservedNodes, set = &n, true
	}
	if end := g.cfg.CapacityBlockEnd; end != nil {
		t := clock(end.Duration)
		o.CapacityBlockEnd, set = &t, true
	}
	if g.cfg.QueuedProvisioning {
		q := true
		o.QueuedProvisioning, set = &q, true
	}
	if !set {
		return nil
	}
	return &o
}

// scheduleBlockEnds queues the start of each capacity block's termination
// and its end.
func (e *Engine) scheduleBlockEnds() {
	for _, g := range e.cloud.groups {
		if end := g.cfg.CapacityBlockEnd; end != nil {
			e.events.push(&event{at: max(0, end.Duration-autoscaler.CapacityBlockTermination), kind: evBlockTerminating, group: g})
			e.events.push(&event{at: end.Duration, kind: evBlockEnd, group: g})
		}
	}
}

// blockTerminating: the cloud launches no more of the group's nodes,
// fails the creations still in flight, and takes the nodes that are left.
func (e *Engine) blockTerminating(g *groupState) error {
	g.blockOver = true
	why := fmt.Sprintf("the capacity block of group %s is ending", g.cfg.Name)
	for _, c := range g.inFlight {
		if !c.canceled && !c.failed {
			c.why = why
			e.creationFailed(c)
		}
	}
	for _, ni := range e.snap.NodesInGroup(g.cfg.Name) {
		if err := e.takeBack(ni.Name()); err != nil {
			return err
		}
	}
	return nil
}

// blockEnd: the block's reservation is no longer billed.
func (e *Engine) blockEnd(g *groupState) error {
	g.reserved = 0
	e.touch()
	return e.setTarget(g, g.target)
}

// takeBack is the cloud deleting a node whose capacity ended: whatever
// runs on it is killed, and the group's target goes down with it.
func (e *Engine) takeBack(name string) error {
	if e.snap.Node(name) == nil {
		return nil // drained and removed before the end
	}
	e.rec.endReclaimed++
	e.cloud.ending[name] = true
	if err := e.evictAll(name); err != nil {
		return err
	}
	return e.removeNode(name)
}

// capacityEnding reports whether node's capacity ends soon: taken back now,
// or in a block within the drain lead (or termination) of its end.
func (e *Engine) capacityEnding(node string) bool {
	if e.cloud.ending[node] {
		return true
	}
	ni := e.snap.Node(node)
	if ni == nil {
		return false
	}
	end := e.cloud.byID[ni.Group].cfg.CapacityBlockEnd
	if end == nil {
		return false
	}
	lead := max(e.opts.Autoscaler.Interruption.CapacityBlockLead, autoscaler.CapacityBlockTermination)
	return e.now >= end.Duration-lead
}

// lostRun counts, for a Job pod displaced from node while the node is
// being taken away (interrupted, or its capacity ending), the run it had
// there, and makes it do that run again.
func (e *Engine) lostRun(p *simPod, node string, ran time.Duration) {
	if p.duration == 0 {
		return
	}
	h := ran.Hours()
	gpus := h * float64(p.w.gpus)
	switch {
	case e.cloud.interrupting[node]:
		e.rec.lostHours += h
		e.rec.lostGPUHours += gpus
	case e.capacityEnding(node):
		e.rec.endLost += h
		e.rec.endLostGPU += gpus
	default:
		return
	}
	p.remaining += ran
}
