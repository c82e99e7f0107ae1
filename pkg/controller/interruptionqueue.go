package controller

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// taintInterrupted puts the interruption taint on the nodes of the
// instances the provider's interruption events name (the AWS provider's
// EC2 interruption queue), so the core sees them as it sees the taints of
// the AWS Node Termination Handler: their replacement ordered at once,
// drained within the notice, counted in the group's interruption rate.
// The core reads the taint from the node, never from the shell. An event
// for an instance with no node (not registered yet, or gone) is logged.
func (c *Controller) taintInterrupted(ctx context.Context) {
	r, ok := c.cp.(cloudprovider.InterruptionReporter)
	if !ok {
		return
	}
	events := r.Interruptions()
	if len(events) == 0 {
		return
	}
	nodes, err := c.listers.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("interruption events: listing nodes", "err", err)
		return
	}
	byInstance := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		if id := instanceOf(n.Spec.ProviderID); id != "" {
			byInstance[id] = n
		}
	}
	for _, ev := range events {
		n := byInstance[ev.InstanceID]
		if n == nil {
			c.log.Info("interruption event for an instance with no node", "instance", ev.InstanceID, "reason", ev.Reason)
			continue
		}
		if hasTaint(n, ev.TaintKey) {
			continue
		}
		taint := v1.Taint{Key: ev.TaintKey, Effect: v1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: c.clock.Now()}}
		if err := putTaint(ctx, c.client, n.Name, taint, "", false); err != nil {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			c.log.Error("interruption event: tainting the node", "node", n.Name, "instance", ev.InstanceID, "taint", ev.TaintKey, "err", err)
			continue
		}
		c.log.Info("node being taken away, tainted", "node", n.Name, "instance", ev.InstanceID, "taint", ev.TaintKey, "reason", ev.Reason)
	}
}

// instanceOf is the last segment of a providerID (aws:///us-east-1a/i-0abc
// gives i-0abc), "" for none.
func instanceOf(providerID string) string {
	if providerID == "" {
		return ""
	}
	return providerID[strings.LastIndexByte(providerID, '/')+1:]
}
