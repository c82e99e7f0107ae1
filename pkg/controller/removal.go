package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// removeBatch removes a batch of nodes without racing the scheduler:
//
//  1. every node of the batch is tainted ToBeDeletedByClusterAutoscaler
//     before any is drained, so no new pod lands on one while another is
//     checked;
//  2. each node's pods are read again from the API server (not the
//     informer cache, which may lag) and compared with the plan: a node
//     holding a pod the plan did not account for (scheduled there after
//     the snapshot) is untainted and its removal called off;
//  3. the others are drained through the Eviction API and deleted
//     through the cloud provider, in parallel (the planner already bounded
//     the batch by --max-drain-parallelism).
//
// Every removal ends in one outcome, queued for the next loop. slices are
// the template ResourceSlices of the nodes' groups, for the metric labels
// of DRA nodes.
func (a *liveActuator) removeBatch(ctx context.Context, r autoscaler.RemoveNodes, slices map[string][]*resourceapi.ResourceSlice) {
	var tainted []scaledown.Removal
	for _, rm := range r.Removals {
		if err := addTaint(ctx, a.client, rm.Node, toBeDeletedTaint(a.clock.Now())); err != nil {
			if apierrors.IsNotFound(err) {
				a.aborted(rm, "the node is gone")
				continue
			}
			a.failed(ctx, rm, "tainting "+scaledown.TaintToBeDeleted, err)
			continue
		}
		tainted = append(tainted, rm)
	}
	var ready []removalWork
	for _, rm := range tainted {
		pods, why, err := a.recheck(ctx, rm)
		switch {
		case err != nil:
			a.failed(ctx, rm, "reading the node's pods", err)
		case why != "":
			a.untaint(ctx, rm)
			a.aborted(rm, why)
		default:
			ready = append(ready, removalWork{rm, pods, slices[rm.Group]})
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

// removalWork is a node cleared for removal and the pods to evict from it,
// as read after tainting.
type removalWork struct {
	rm   scaledown.Removal
	pods []*v1.Pod
	// slices are the group's template slices (metric labels).
	slices []*resourceapi.ResourceSlice
}

// recheck reads the node's pods and says why the plan no longer holds
// ("" when it does). It returns the pods to evict: those of the plan still
// there, with their current state.
func (a *liveActuator) recheck(ctx context.Context, rm scaledown.Removal) ([]*v1.Pod, string, error) {
	planned := map[types.UID]bool{}
	for _, m := range rm.Evict {
		planned[m.Pod.UID] = true
	}
	for _, p := range rm.DaemonSetPods {
		planned[p.UID] = true
	}
	list, err := a.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", rm.Node).String()})
	if err != nil {
		return nil, "", err
	}
	var unplanned []string
	var pods []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.Spec.NodeName != rm.Node, p.Status.Phase == v1.PodSucceeded, p.Status.Phase == v1.PodFailed,
			p.DeletionTimestamp != nil:
		case planned[p.UID]:
			pods = append(pods, p)
		case drain.IsDaemonSetPod(p), drain.IsMirrorPod(p), drain.IsExpendable(p, a.expendableCutoff):
			// Not moved by a drain: they go with the node.
		default:
			unplanned = append(unplanned, p.Namespace+"/"+p.Name)
		}
	}
	if len(unplanned) > 0 {
		return nil, fmt.Sprintf("pod(s) %s arrived after the plan", strings.Join(unplanned, ", ")), nil
	}
	return pods, "", nil
}

// drainAndDelete evicts a node's pods and deletes it.
func (a *liveActuator) drainAndDelete(ctx context.Context, w removalWork, grace time.Duration) {
	rm := w.rm
	a.events.node(rm.Node, v1.EventTypeNormal, status.EventScaleDown, removalMessage(rm), removalAnnotations(rm, ""))
	if len(w.pods) > 0 {
		o := drainOptions{MaxPodEvictionTime: a.maxPodEvictionTime, MaxGracefulTermination: grace, RetryInterval: retryInterval}
		if err := evictAll(ctx, a.client, a.clock, w.pods, o); err != nil {
			a.metrics.evictedPods.WithLabelValues("failed").Inc()
			a.failed(ctx, rm, "draining", err)
			return
		}
		a.metrics.evictedPods.WithLabelValues("succeeded").Add(float64(len(w.pods)))
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: rm.Node}}
	if n, err := a.client.CoreV1().Nodes().Get(ctx, rm.Node, metav1.GetOptions{}); err == nil {
		node = n
	}
	if err := a.cp.DeleteNodes(ctx, rm.Group, []*v1.Node{node}); err != nil {
		a.failed(ctx, rm, "deleting the node", err)
		return
	}
	labels := append([]string{metricsRemovalReason(rm)}, gpuLabels(node, w.slices)...)
	a.metrics.scaledDownNodes.WithLabelValues(labels...).Inc()
	if labels[1] != "" {
		a.metrics.scaledDownGPU.WithLabelValues(labels...).Inc()
	}
	now := a.clock.Now()
	a.metrics.lastActivity.WithLabelValues("scaleDown").Set(float64(now.Unix()))
	a.log.Info("scaled down", "node", rm.Node, "group", rm.Group, "reason", removalReason(rm), "evicted", len(w.pods))
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
func (a *liveActuator) failed(ctx context.Context, rm scaledown.Removal, step string, err error) {
	a.log.Error("scale-down failed", "node", rm.Node, "step", step, "err", err)
	a.events.node(rm.Node, v1.EventTypeWarning, status.EventScaleDownFailed, fmt.Sprintf("%s: %v", step, err), removalAnnotations(rm, ""))
	a.untaint(ctx, rm)
	a.metrics.errors.WithLabelValues("cloudProviderError").Inc()
	a.outcomes.Add(autoscaler.RemovalFailed{Node: rm.Node, Group: rm.Group, At: a.clock.Now(), Step: step, Error: err.Error()})
}

func (a *liveActuator) aborted(rm scaledown.Removal, why string) {
	a.log.Info("scale-down called off", "node", rm.Node, "why", why)
	a.events.node(rm.Node, v1.EventTypeNormal, status.EventScaleDownAborted, why, removalAnnotations(rm, ""))
	a.outcomes.Add(autoscaler.RemovalAborted{Node: rm.Node, Group: rm.Group, At: a.clock.Now(), Reason: why})
}

func (a *liveActuator) untaint(ctx context.Context, rm scaledown.Removal) {
	if err := removeTaint(context.WithoutCancel(ctx), a.client, rm.Node, scaledown.TaintToBeDeleted); err != nil {
		a.log.Error("removing the taint after a called-off scale-down", "node", rm.Node, "err", err)
	}
}

func removalMessage(r scaledown.Removal) string {
	why := removalReason(r)
	if r.Consolidation != "" {
		why = r.Consolidation
	}
	if r.Empty {
		if r.Consolidation == "" {
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
func removalReason(r scaledown.Removal) string {
	if r.Consolidation != "" {
		return status.RemovalConsolidation
	}
	return metricsRemovalReason(r)
}

// metricsRemovalReason is upstream's reason label of scaled_down_nodes_total.
func metricsRemovalReason(r scaledown.Removal) string {
	switch {
	case r.Unready:
		return status.RemovalUnready
	case r.Empty:
		return status.RemovalEmpty
	}
	return status.RemovalUnderutilized
}

// removalAnnotations are the removal's facts on its events; node names the
// node on events about the status ConfigMap.
func removalAnnotations(r scaledown.Removal, node string) map[string]string {
	a := map[string]string{status.AnnotationNodeGroup: r.Group, status.AnnotationRemovalReason: removalReason(r)}
	if node != "" {
		a[status.AnnotationNode] = node
	}
	return a
}
