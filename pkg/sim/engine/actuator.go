package engine

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// simActuator carries the core's actions out on the modelled cloud and
// cluster. A scale-up asks for nodes that register after the provisioning
// delay (or fail, in a stockout window, reported after the creation
// failure delay); a removal taints the node, evicts its pods at once (a
// Job pod goes back to the queue with what is left of its run, a
// Deployment's pod is replaced) and deletes the node after the node
// deletion delay, then reports it done. Soft taints change nothing the
// placement model scores.
type simActuator struct{ e *Engine }

var _ actuation.Actuator = simActuator{}

func (a simActuator) DecreaseTarget(_ context.Context, d autoscaler.DecreaseTarget) error {
	g, err := a.e.cloud.group(d.Group)
	if err != nil {
		return err
	}
	return a.e.cancelNodes(g, d.Delta)
}

// DeleteInstances: the modelled cloud's instances always register, so
// there is nothing to delete.
func (a simActuator) DeleteInstances(context.Context, autoscaler.DeleteInstances) error { return nil }

func (a simActuator) ScaleUp(_ context.Context, su autoscaler.ScaleUp) error {
	g, err := a.e.cloud.group(su.Group)
	if err != nil {
		return err
	}
	if su.Queued != nil {
		return a.e.requestQueued(g, su)
	}
	if err := a.e.requestNodes(g, su.Delta); err != nil {
		return err
	}
	a.e.rec.scaleUps++
	a.e.touch()
	return nil
}

func (a simActuator) Cordon(_ context.Context, c autoscaler.Cordon) error {
	for _, n := range c.Nodes {
		if err := a.e.replaceNode(n, func(node *v1.Node) {
			node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: autoscaler.TaintConsolidating, Effect: v1.TaintEffectNoSchedule})
		}); err != nil {
			return err
		}
	}
	return nil
}

func (a simActuator) Uncordon(_ context.Context, c autoscaler.Uncordon) error {
	for _, n := range c.Nodes {
		if err := a.e.replaceNode(n, func(node *v1.Node) {
			kept := node.Spec.Taints[:0]
			for _, t := range node.Spec.Taints {
				if t.Key != autoscaler.TaintConsolidating {
					kept = append(kept, t)
				}
			}
			node.Spec.Taints = kept
		}); err != nil {
			return err
		}
	}
	return nil
}

// SetRequestConditions writes a ProvisioningRequest's status; the job
// behind it reacts (gang.go).
func (a simActuator) SetRequestConditions(_ context.Context, s autoscaler.SetRequestConditions) error {
	return a.e.setRequestConditions(s)
}

func (simActuator) SoftTaint(context.Context, autoscaler.SoftTaint) error     { return nil }
func (simActuator) SoftUntaint(context.Context, autoscaler.SoftUntaint) error { return nil }

func (a simActuator) RemoveNodes(_ context.Context, r autoscaler.RemoveNodes) {
	for _, rm := range r.Removals {
		if err := a.e.startRemoval(rm); err != nil {
			a.e.fail(err)
		}
	}
}

// startRemoval drains a node and deletes it, at once or after the node
// deletion delay.
func (e *Engine) startRemoval(rm disruption.Removal) error {
	if e.snap.Node(rm.Node) == nil {
		e.outcomes = append(e.outcomes, autoscaler.RemovalAborted{Node: rm.Node, Group: rm.Group, At: clock(e.now),
			Reason: "the node is gone"})
		return nil
	}
	if err := e.cordon(rm.Node); err != nil {
		return err
	}
	before := e.rec.evictions
	if err := e.evictAll(rm.Node); err != nil {
		return err
	}
	if rm.Consolidation != "" {
		e.rec.consolidation.NodesRemoved++
		e.rec.consolidation.Evictions += e.rec.evictions - before
	}
	if e.sc.NodeDeletionDelay.Duration == 0 {
		return e.nodeDeleted(rm.Node)
	}
	e.events.push(&event{at: e.now + e.sc.NodeDeletionDelay.Duration, kind: evDeleted, node: rm.Node})
	return nil
}

// evictAll evicts every pod of a node but its DaemonSet pods.
func (e *Engine) evictAll(node string) error {
	ni := e.snap.Node(node)
	for _, pi := range append(ni.Pods[:0:0], ni.Pods...) {
		p := e.work.pods[pi.Pod.Name]
		if p == nil {
			if e.isDaemonSetPod(pi) {
				continue
			}
			return fmt.Errorf("node %s holds unknown pod %s", node, pi.Pod.Name)
		}
		if err := e.evict(p); err != nil {
			return err
		}
	}
	return nil
}

// nodeDeleted ends a removal: pods that still got there go, the node goes,
// and the core hears of it.
func (e *Engine) nodeDeleted(name string) error {
	ni := e.snap.Node(name)
	if ni == nil {
		return nil
	}
	group := ni.Group
	if err := e.evictAll(name); err != nil {
		return err
	}
	if err := e.removeNode(name); err != nil {
		return err
	}
	e.rec.scaleDowns++
	e.outcomes = append(e.outcomes, autoscaler.RemovalDone{Node: name, Group: group, At: clock(e.now)})
	return nil
}
