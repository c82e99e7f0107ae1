package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// A node the cloud is taking away goes whatever happens: unlike a
// voluntary removal it is never called off, and its drain is bounded by
// the notice, not by --max-pod-eviction-time. Evictions go through the
// Eviction API, so PodDisruptionBudgets are respected while the notice
// leaves time; in the last part of the notice (the capped grace period,
// at most half the notice) a pod a budget still holds is deleted instead,
// the budget bypassed: the cloud would otherwise kill it without any grace
// at all. Each pod's grace period is its own, capped at
// --max-graceful-termination-sec and at the time left. The node is then
// deleted through the provider, which lowers its group's target, so the
// group does not launch into the pool being reclaimed.

// drainInterrupted drains and deletes a node being taken away, and queues
// one outcome. lead is the leader's context.
func (a *liveActuator) drainInterrupted(lead context.Context, rm disruption.Removal, grace time.Duration) {
	now := a.clock.Now()
	ctx, cancel := withClockTimeout(lead, a.clock, max(rm.Deadline.Sub(now), 0)+a.maxNodeDeletionTime)
	defer cancel()
	a.log.Info("node being taken away: draining it before the notice ends", "node", rm.Node, "group", rm.Group,
		"signal", rm.Interruption, "deadline", rm.Deadline)
	a.events.node(rm.Node, v1.EventTypeWarning, status.EventInterrupted,
		fmt.Sprintf("node is being taken away (%s): draining by %s, replacement ordered", rm.Interruption, rm.Deadline.UTC().Format(time.RFC3339)),
		map[string]string{status.AnnotationNodeGroup: rm.Group, status.AnnotationRemovalReason: status.RemovalInterrupted})
	fail := func(step string, err error) {
		a.log.Error("draining a node being taken away failed", "node", rm.Node, "step", step, "err", err)
		a.outcomes.Add(autoscaler.RemovalFailed{Node: rm.Node, Group: rm.Group, At: a.clock.Now(), Step: step, Error: err.Error()})
	}
	err := putTaint(ctx, a.client, rm.Node, toBeDeletedTaint(now), a.owner(), true)
	switch {
	case apierrors.IsNotFound(err):
		a.outcomes.Add(autoscaler.RemovalDone{Node: rm.Node, Group: rm.Group, At: a.clock.Now()})
		return // already gone with its instance
	case err != nil:
		fail("tainting "+disruption.TaintToBeDeleted, contextCause(ctx, err))
		return
	}
	list, err := a.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", rm.Node).String()})
	if err != nil {
		fail("reading the node's pods", contextCause(ctx, err))
		return
	}
	var pods []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed &&
			!drain.IsDaemonSetPod(p) && !drain.IsMirrorPod(p) {
			pods = append(pods, p)
		}
	}
	bypassed, err := evictWithin(ctx, a, pods, rm.Deadline, grace)
	if err != nil {
		fail("draining", contextCause(ctx, err))
		return
	}
	a.metrics.evictedPods.WithLabelValues("succeeded").Add(float64(len(pods)))
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: rm.Node}}
	if n, err := a.client.CoreV1().Nodes().Get(ctx, rm.Node, metav1.GetOptions{}); err == nil {
		node = n
	}
	if err := a.cp.DeleteNodes(ctx, rm.Group, []*v1.Node{node}); err != nil && !errors.Is(err, cloudprovider.ErrNotFound) {
		fail("deleting the node", contextCause(ctx, err))
		return
	}
	a.log.Info("node being taken away drained and deleted", "node", rm.Node, "group", rm.Group, "evicted", len(pods),
		"budgetsBypassed", bypassed)
	a.outcomes.Add(autoscaler.RemovalDone{Node: rm.Node, Group: rm.Group, At: a.clock.Now()})
}

// evictWithin evicts pods through the Eviction API, in rounds so that one
// pod a budget holds does not keep the others waiting, until the bypass
// time: the deadline less the grace cap (at most half the time left).
// Pods still held then are deleted, bypassing their budgets; it returns
// how many. Every pod's grace period is capped at grace and at the time
// left before the deadline.
func evictWithin(ctx context.Context, a *liveActuator, pods []*v1.Pod, deadline time.Time, grace time.Duration) (int, error) {
	left := deadline.Sub(a.clock.Now())
	bypassAt := deadline.Add(-min(grace, left/2))
	for len(pods) > 0 {
		var held []*v1.Pod
		for _, p := range pods {
			err := a.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: graceWithin(p, grace, deadline, a.clock.Now()), Preconditions: &metav1.Preconditions{UID: &p.UID}},
			})
			switch {
			case err == nil || apierrors.IsNotFound(err):
			case apierrors.IsConflict(err) && gone(ctx, a.client, p):
			default:
				// Held by a budget, a write inside the API server
				// conflicted, or another error (drain.go): tried again
				// next round, and deleted at the bypass time.
				held = append(held, p)
			}
		}
		pods = held
		if len(pods) == 0 || !a.clock.Now().Before(bypassAt) {
			break
		}
		if err := sleep(ctx, a.clock, retryInterval); err != nil {
			return 0, err
		}
	}
	for _, p := range pods {
		err := a.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: graceWithin(p, grace, deadline, a.clock.Now()), Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("deleting %s/%s past its disruption budget: %w", p.Namespace, p.Name, err)
		}
		a.log.Warn("pod deleted past its disruption budget: its node's notice is ending", "pod", p.Namespace+"/"+p.Name, "node", p.Spec.NodeName)
	}
	return len(pods), nil
}

// gone reports whether p is gone or another pod has its name (lookAgain).
func gone(ctx context.Context, c kubernetes.Interface, p *v1.Pod) bool {
	g, _ := lookAgain(ctx, c, p)
	return g
}

// graceWithin is the pod's grace period capped at grace and at the time
// left before the deadline.
func graceWithin(p *v1.Pod, grace time.Duration, deadline, now time.Time) *int64 {
	g := int64(min(grace, max(deadline.Sub(now), 0)).Seconds())
	if own := p.Spec.TerminationGracePeriodSeconds; own != nil && *own < g {
		g = *own
	}
	return &g
}
