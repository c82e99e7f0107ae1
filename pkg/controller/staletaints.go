package controller

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// staleTaints is what one start-up clean-up did.
type staleTaints struct {
	// Cleaned counts the taints removed.
	Cleaned int
	// Failed are the nodes whose taints could not be removed, each with
	// its error; the loop tries them again (untaintOwed).
	Failed []error
}

// cleanStaleTaints removes the taints a previous run left on nodes it did
// not finish removing: a crash mid-drain must not leave nodes cordoned for
// ever. A node is cleaned when its AnnotationTaintOwner names this
// autoscaler (whatever its group: one that left --nodes or discovery
// keeps no taint of ours), or, without that annotation, when it belongs
// to one of this instance's node groups. Nodes another shard owns are left
// alone: it may be draining them.
//
// An error means the clean-up could not start (the cloud provider's
// refresh or the node list failed) and must be tried again before the
// loop acts. A node that cannot be updated (an admission webhook, a
// policy, a 5xx) does not stop the others: it is listed in Failed, and
// its taints are owed (untaintOwed), tried again on every loop.
func (c *Controller) cleanStaleTaints(ctx context.Context) (staleTaints, error) {
	var out staleTaints
	if err := c.cp.Refresh(ctx); err != nil {
		return out, fmt.Errorf("cloud provider %s: refresh: %w", c.cp.Name(), err)
	}
	ours := map[string]bool{}
	for _, g := range c.cp.NodeGroups() {
		ours[g.ID] = true
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("listing nodes to clean stale taints: %w", err)
	}
	owner := c.cluster.owner()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !hasOwnedTaint(n) || !c.ownsTaints(n, owner, ours) {
			continue
		}
		for _, key := range ownedTaintKeys {
			if !hasTaint(n, key) {
				continue
			}
			if err := removeTaint(ctx, c.client, n.Name, key); err != nil {
				out.Failed = append(out.Failed, fmt.Errorf("node %s: removing stale taint %s: %w", n.Name, key, err))
				// The loop tries again, as each was read: a taint this run
				// writes on the node later has another value and stays.
				for _, t := range n.Spec.Taints {
					if slices.Contains(ownedTaintKeys[:], t.Key) {
						c.cluster.owed.add(n.Name, t)
					}
				}
				break
			}
			out.Cleaned++
		}
	}
	return out, nil
}

// ownsTaints says whether n's scale-down taints are this autoscaler's.
func (c *Controller) ownsTaints(n *v1.Node, owner string, ours map[string]bool) bool {
	if o, ok := n.Annotations[AnnotationTaintOwner]; ok {
		return o == owner
	}
	g, err := c.cp.NodeGroupForNode(n)
	return err == nil && ours[g]
}

// cleanUpAtStart runs cleanStaleTaints and reports what it did; it returns
// false when the clean-up must be tried again (on the next loop: the loop
// does not act before it has run).
func (c *Controller) cleanUpAtStart(ctx context.Context) bool {
	r, err := c.cleanStaleTaints(ctx)
	if err != nil {
		c.log.Error("cleaning taints left by an earlier run; retrying on the next loop", "err", err)
		return false
	}
	for _, err := range r.Failed {
		c.metrics.errors.WithLabelValues("apiCallError").Inc()
		c.log.Error("a stale taint could not be removed; retrying on the next loop", "err", err)
	}
	if r.Cleaned > 0 {
		c.log.Info("removed taints left by an earlier run", "count", r.Cleaned)
	}
	return true
}
