package engine

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The modelled cloud's queued capacity (a group with queuedProvisioning,
// as a GKE flex-start node pool): a request for a whole count of nodes
// waits in the cloud's queue for the group's queuedDelay (to the end of a
// stockout window that covers that time), is then granted all at once,
// its nodes registering after the provisioning delay, and, with a run
// duration, the cloud deletes them that long after the grant, killing
// whatever still runs there.

// queuedRequest is one request in a group's queue.
type queuedRequest struct {
	group       *groupState
	name        string
	count       int
	state       snapshot.QueuedState
	runDuration time.Duration
	// nodes are the granted nodes that registered.
	nodes []string
}

// requestQueued puts the core's queued scale-up in the group's queue; a
// request of the same name already there is not made twice.
func (e *Engine) requestQueued(g *groupState, su autoscaler.ScaleUp) error {
	if !g.cfg.QueuedProvisioning {
		return fmt.Errorf("node group %s: queued request %s: the group takes no queued capacity (queuedProvisioning)", g.cfg.Name, su.Queued.Name)
	}
	waiting := 0
	for _, q := range g.queue {
		if q.name == su.Queued.Name {
			return nil
		}
		if q.state == snapshot.QueuedWaiting {
			waiting += q.count
		}
	}
	if g.target+waiting+su.Delta > g.cfg.MaxSize {
		return fmt.Errorf("node group %s: queued request %s: target %d (requests waiting included) + %d would exceed maxSize %d",
			g.cfg.Name, su.Queued.Name, g.target+waiting, su.Delta, g.cfg.MaxSize)
	}
	q := &queuedRequest{group: g, name: su.Queued.Name, count: su.Delta, state: snapshot.QueuedWaiting, runDuration: su.Queued.RunDuration}
	g.queue = append(g.queue, q)
	e.rec.queuedRequests++
	e.events.push(&event{at: g.grantTime(e.now + g.cfg.QueuedDelay.Duration), kind: evQueuedGrant, queued: q})
	e.touch()
	return e.setTarget(g, g.target)
}

// grantTime is when the cloud has capacity for a request due at t: t, or
// the end of the stockout windows that cover it.
func (g *groupState) grantTime(t time.Duration) time.Duration {
	for moved := true; moved; {
		moved = false
		for _, w := range g.cfg.Stockouts {
			if t >= w.From.Duration && t < w.To.Duration {
				t, moved = w.To.Duration, true
			}
		}
	}
	return t
}

// grantQueued adds the request's nodes to its group at once.
func (e *Engine) grantQueued(q *queuedRequest) error {
	g := q.group
	q.state = snapshot.QueuedProvisioned
	for i := 0; i < q.count; i++ {
		c := &creation{group: g, requested: e.now, queued: q}
		g.inFlight = append(g.inFlight, c)
		e.events.push(&event{at: e.now + e.sc.ProvisioningDelay.Duration, kind: evRegister, creation: c})
	}
	if q.runDuration > 0 {
		e.events.push(&event{at: e.now + q.runDuration, kind: evRunEnd, queued: q})
	}
	g.added += q.count
	e.rec.scaleUps++
	e.touch()
	return e.setTarget(g, g.target+q.count)
}

// endRun is the end of a granted request's run: the cloud deletes its
// nodes, and the request leaves the queue.
func (e *Engine) endRun(q *queuedRequest) error {
	g := q.group
	for _, c := range g.inFlight {
		if c.queued == q && !c.canceled {
			c.canceled = true
			g.added--
			if err := e.setTarget(g, g.target-1); err != nil {
				return err
			}
		}
	}
	for _, n := range q.nodes {
		if err := e.takeBack(n); err != nil {
			return err
		}
	}
	for i, x := range g.queue {
		if x == q {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			break
		}
	}
	return e.setTarget(g, g.target)
}

// queuedList is the group's queue as the core reads it.
func (g *groupState) queuedList() []snapshot.QueuedRequest {
	if len(g.queue) == 0 {
		return nil
	}
	out := make([]snapshot.QueuedRequest, len(g.queue))
	for i, q := range g.queue {
		out[i] = snapshot.QueuedRequest{Name: q.name, Count: q.count, State: q.state}
	}
	return out
}
