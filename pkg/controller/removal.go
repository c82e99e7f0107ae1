package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// removeBatch removes a batch of nodes without racing the scheduler:
//
//  1. every node of the batch is tainted ToBeDeletedByClusterAutoscaler
//     before any is drained, so no new pod lands on one while another is
//     checked;
//  2. each node's pods are read again from the API server (not the
//     informer cache, which may lag) and judged again with the drain
//     rules (checkPods): a node holding a pod the plan did not account
//     for, or one that may no longer move (annotated since), is untainted
//     and its removal called off; pods already terminating are waited for;
//  3. the others are drained through the Eviction API, their pods read a
//     last time (a pod bound by nodeName ignores the taint), and deleted
//     through the cloud provider, in parallel (the planner already bounded
//     the batch by --max-drain-parallelism).
//
// ctx is the leader's: it ends when the Lease is lost, and so does every
// drain; each drain is also bounded by drainTimeout. Only this instance's
// own taint is ever taken off again, and only while it leads (untaint).
//
// Every removal ends in one outcome, queued for the next loop. groupSlices
// are the template ResourceSlices of the nodes' groups, for the metric
// labels of DRA nodes. The taints and re-checks of the batch's nodes run
// up to apiConcurrency at once (forEach).
func (a *liveActuator) removeBatch(ctx context.Context, r autoscaler.RemoveNodes, groupSlices map[string][]*resourceapi.ResourceSlice) {
	works := make([]*removalWork, len(r.Removals))
	errs := make([]error, len(r.Removals))
	taint := toBeDeletedTaint(a.clock.Now())
	forEach(len(works), a.apiConcurrency, func(i int) {
		rm := r.Removals[i]
		works[i] = &removalWork{rm: rm, taint: taint, slices: groupSlices[rm.Group]}
		// An older ToBeDeleted taint is replaced: the planner judged it
		// stale (--max-cloud-provider-node-deletion-time), and untaint
		// compares the value written here.
		errs[i] = putTaint(ctx, a.client, rm.Node, taint, a.owner(), true)
	})
	var tainted []*removalWork
	for i, w := range works {
		switch err := errs[i]; {
		case apierrors.IsNotFound(err):
			a.aborted(w.rm, "the node is gone")
		case err != nil:
			a.failed(ctx, w, "tainting "+disruption.TaintToBeDeleted, err)
		default:
			tainted = append(tainted, w)
		}
	}
	// Every node of the batch is tainted before any is read again.
	checks := make([]podCheck, len(tainted))
	checkErrs := make([]error, len(tainted))
	forEach(len(tainted), a.apiConcurrency, func(i int) {
		checks[i], checkErrs[i] = a.recheck(ctx, tainted[i].rm)
	})
	var ready []*removalWork
	for i, w := range tainted {
		switch c, err := checks[i], checkErrs[i]; {
		case err != nil:
			a.failed(ctx, w, "reading the node's pods", err)
		case c.why != "":
			a.untaint(ctx, w)
			a.aborted(w.rm, c.why)
		default:
			w.check = c
			ready = append(ready, w)
		}
	}
	var wg sync.WaitGroup
	for _, w := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.drainAndDelete(ctx, w, r.MaxGracefulTermination)
		}()
	}
	wg.Wait()
}

// removalWork is a node being removed: the taint put on it and, once
// re-checked, its pods.
type removalWork struct {
	rm disruption.Removal
	// taint is the ToBeDeleted taint as this instance wrote it.
	taint v1.Taint
	check podCheck
	// slices are the group's template slices (metric labels).
	slices []*resourceapi.ResourceSlice
}

// untaintTimeout bounds taking a taint off after a removal failed: long
// enough for conflict retries, short enough not to hold shutdown.
const untaintTimeout = 30 * time.Second

// drainTimeout bounds one node's drain and deletion: the eviction retries
// (--max-pod-eviction-time), the pods' termination (the capped grace
// period plus the long-terminating margin) and the cloud deletion
// (--max-cloud-provider-node-deletion-time).
func (a *liveActuator) drainTimeout(grace time.Duration) time.Duration {
	return a.maxPodEvictionTime + grace + drain.LongTerminatingMargin + a.maxNodeDeletionTime
}

// owner is the value of AnnotationTaintOwner for this autoscaler.
func (a *liveActuator) owner() string { return a.statusNamespace + "/" + a.statusName }

// drainAndDelete evicts a node's pods and deletes it. lead is the
// leader's context.
func (a *liveActuator) drainAndDelete(lead context.Context, w *removalWork, grace time.Duration) {
	rm := w.rm
	ctx, cancel := withClockTimeout(lead, a.clock, a.drainTimeout(grace))
	defer cancel()
	a.events.node(rm.Node, v1.EventTypeNormal, status.EventScaleDown, removalMessage(rm), removalAnnotations(rm, ""))
	if len(w.check.evict)+len(w.check.await) > 0 {
		o := drainOptions{MaxPodEvictionTime: a.maxPodEvictionTime, MaxGracefulTermination: grace, RetryInterval: retryInterval}
		if err := evictAll(ctx, a.client, a.clock, w.check.evict, w.check.await, o); err != nil {
			a.metrics.evictedPods.WithLabelValues("failed").Inc()
			a.failed(lead, w, "draining", contextCause(ctx, err))
			return
		}
		a.metrics.evictedPods.WithLabelValues("succeeded").Add(float64(len(w.check.evict)))
	}
	why, err := a.lastLook(ctx, rm)
	switch {
	case err != nil:
		a.failed(lead, w, "reading the node's pods after the drain", contextCause(ctx, err))
		return
	case why != "":
		a.untaint(lead, w)
		a.aborted(rm, why)
		return
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: rm.Node}}
	if n, err := a.client.CoreV1().Nodes().Get(ctx, rm.Node, metav1.GetOptions{}); err == nil {
		node = n
	}
	if err := a.cp.DeleteNodes(ctx, rm.Group, []*v1.Node{node}); err != nil {
		a.failed(lead, w, "deleting the node", contextCause(ctx, err))
		return
	}
	labels := append([]string{metricsRemovalReason(rm)}, gpuLabels(node, w.slices)...)
	a.metrics.scaledDownNodes.WithLabelValues(labels...).Inc()
	if labels[1] != "" {
		a.metrics.scaledDownGPU.WithLabelValues(labels...).Inc()
	}
	now := a.clock.Now()
	a.metrics.lastActivity.WithLabelValues("scaleDown").Set(float64(now.Unix()))
	a.log.Info("scaled down", "node", rm.Node, "group", rm.Group, "reason", removalReason(rm), "evicted", len(w.check.evict))
	if rm.Empty {
		a.events.configMap(a.statusNamespace, a.statusName, v1.EventTypeNormal, status.EventScaleDownEmpty,
			"Scale-down: removing empty node "+rm.Node, removalAnnotations(rm, rm.Node))
	} else {
		a.events.configMap(a.statusNamespace, a.statusName, v1.EventTypeNormal, status.EventScaleDown,
			fmt.Sprintf("Scale-down: node %s removed with drain", rm.Node), removalAnnotations(rm, rm.Node))
	}
	a.outcomes.Add(autoscaler.RemovalDone{Node: rm.Node, Group: rm.Group, At: now})
}

// failed takes the taint off again so the node is usable, and reports the
// failure; scale-down then pauses for --scale-down-delay-after-failure.
func (a *liveActuator) failed(lead context.Context, w *removalWork, step string, err error) {
	rm := w.rm
	a.log.Error("scale-down failed", "node", rm.Node, "step", step, "err", err)
	a.events.node(rm.Node, v1.EventTypeWarning, status.EventScaleDownFailed, fmt.Sprintf("%s: %v", step, err), removalAnnotations(rm, ""))
	a.untaint(lead, w)
	a.metrics.errors.WithLabelValues("cloudProviderError").Inc()
	a.outcomes.Add(autoscaler.RemovalFailed{Node: rm.Node, Group: rm.Group, At: a.clock.Now(), Step: step, Error: err.Error()})
}

func (a *liveActuator) aborted(rm disruption.Removal, why string) {
	a.log.Info("scale-down called off", "node", rm.Node, "why", why)
	a.events.node(rm.Node, v1.EventTypeNormal, status.EventScaleDownAborted, why, removalAnnotations(rm, ""))
	a.outcomes.Add(autoscaler.RemovalAborted{Node: rm.Node, Group: rm.Group, At: a.clock.Now(), Reason: why})
}

// untaint takes this instance's ToBeDeleted taint off the node after a
// called-off or failed removal. It does nothing once lead has ended: a
// replica that lost the Lease must not write (the new leader may be
// removing the same node under a taint of its own; its start-up clean-up
// takes ours off). Even while leading, only the taint as this instance
// wrote it is removed, never one with another value.
func (a *liveActuator) untaint(lead context.Context, w *removalWork) {
	if lead.Err() != nil {
		a.log.Info("not leading any more: the taint stays for the next leader's start-up clean-up", "node", w.rm.Node)
		return
	}
	ctx, cancel := withClockTimeout(lead, a.clock, untaintTimeout)
	defer cancel()
	if err := removeOwnTaint(ctx, a.client, w.rm.Node, w.taint); err != nil {
		a.log.Error("removing the taint after a called-off scale-down; retrying on the next loop", "node", w.rm.Node, "err", contextCause(ctx, err))
		a.owed.add(w.rm.Node, w.taint)
	}
}

// untaintOwed tries again to take off the taints that could not be: a
// removal's taint its untaint could not take off, and a predecessor's that
// the start-up clean-up could not. A ToBeDeleted taint left behind keeps
// the node out of the scheduler's reach for as long as this instance leads
// (its start-up clean-up is the only other that removes it). Each is
// removed only as it was written, so a node planned again since, under a
// taint with a new value, keeps that one. It runs at the start of every
// loop, on the loop's goroutine.
func (a *liveActuator) untaintOwed(lead context.Context) {
	owed := a.owed.take()
	for _, k := range slices.SortedFunc(maps.Keys(owed), compareOwed) {
		taint := owed[k]
		ctx, cancel := withClockTimeout(lead, a.clock, untaintTimeout)
		err := removeOwnTaint(ctx, a.client, k.node, taint)
		if err != nil {
			a.metrics.errors.WithLabelValues("apiCallError").Inc()
			a.log.Error("removing a taint left behind; retrying on the next loop", "node", k.node, "taint", k.key, "err", contextCause(ctx, err))
			a.owed.add(k.node, taint)
		} else {
			a.log.Info("a taint left behind is off", "node", k.node, "taint", k.key)
		}
		cancel()
	}
}

// owedTaints are the taints this instance (or the run before it) put on
// nodes and that could not be taken off again, by node and key. The
// drains and the start-up clean-up add to it; the loop retries them.
type owedTaints struct {
	mu     sync.Mutex
	taints map[owedKey]v1.Taint
}

type owedKey struct{ node, key string }

func compareOwed(a, b owedKey) int {
	if c := strings.Compare(a.node, b.node); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

func (o *owedTaints) add(node string, t v1.Taint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.taints == nil {
		o.taints = map[owedKey]v1.Taint{}
	}
	o.taints[owedKey{node, t.Key}] = t
}

// take empties the set and returns what it held.
func (o *owedTaints) take() map[owedKey]v1.Taint {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.taints
	o.taints = nil
	return t
}

func removalMessage(r disruption.Removal) string {
	why := removalReason(r)
	switch {
	case r.Consolidation != "":
		why = r.Consolidation
	case r.Repair != "":
		why = r.Repair
	}
	if r.Empty {
		if r.Consolidation == "" && r.Repair == "" {
			return "removing empty node"
		}
		return "removing empty node (" + why + ")"
	}
	names := make([]string, 0, len(r.Evict))
	for _, m := range r.Evict {
		names = append(names, m.Pod.Namespace+"/"+m.Pod.Name)
	}
	return fmt.Sprintf("removing node (%s), evicting %d pod(s): %s", why, len(names), strings.Join(names, ", "))
}

// removalReason is why the node goes, as status.Removal* names it.
func removalReason(r disruption.Removal) string {
	if r.Consolidation != "" {
		return status.RemovalConsolidation
	}
	return metricsRemovalReason(r)
}

// metricsRemovalReason is upstream's reason label of scaled_down_nodes_total,
// and repair for node repair's removals.
func metricsRemovalReason(r disruption.Removal) string {
	switch {
	case r.Repair != "":
		return status.RemovalRepair
	case r.Unready:
		return status.RemovalUnready
	case r.Empty:
		return status.RemovalEmpty
	}
	return status.RemovalUnderutilized
}

// removalAnnotations are the removal's facts on its events; node names the
// node on events about the status ConfigMap.
func removalAnnotations(r disruption.Removal, node string) map[string]string {
	a := map[string]string{status.AnnotationNodeGroup: r.Group, status.AnnotationRemovalReason: removalReason(r)}
	if node != "" {
		a[status.AnnotationNode] = node
	}
	return a
}
