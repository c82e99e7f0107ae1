package controller

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// liveActuator carries actions out on a real cluster: target changes
// through the cloud provider, taints through the API server, removals in
// the background with the Eviction API.
type liveActuator struct {
	client   kubernetes.Interface
	cp       cloudprovider.CloudProvider
	clock    clock.WithTicker
	log      *slog.Logger
	metrics  *metrics
	events   *eventSink
	outcomes *actuation.Queue
	// maxPodEvictionTime bounds retries of evictions a PDB refuses.
	maxPodEvictionTime time.Duration
	// maxNodeDeletionTime bounds the cloud deletion of a drained node
	// (--max-cloud-provider-node-deletion-time).
	maxNodeDeletionTime time.Duration
	// drainOptions are the planners' drain-rule options, with which a
	// node's pods are judged again after tainting.
	drainOptions drain.Options
	// pdbs reads the PodDisruptionBudgets for those rules; nil reads
	// none.
	pdbs policylisters.PodDisruptionBudgetLister
	// statusNamespace and statusName name the status ConfigMap, which
	// carries the scale-up and scale-down events, as upstream's does.
	statusNamespace, statusName string
	// drains tracks background removals, so shutdown can wait for them.
	drains sync.WaitGroup
	// owed are the taints untaint could not take off (untaintOwed).
	owed owedTaints
	// apiConcurrency bounds the API calls one action makes at once
	// (forEach); the client's rate limiter bounds their rate.
	apiConcurrency int
	// requests writes ProvisioningRequest conditions; nil when they are
	// not enabled.
	requests *requestWatch
	// spared counts, by group, the instances of this loop's plan that
	// DeleteInstances kept because they registered after all: the plan
	// counted on their slots, and a scale-up of the same plan takes them
	// back (loop goroutine only; reset by newPlan).
	spared map[string]int
}

// newPlan starts carrying out a new plan.
func (a *liveActuator) newPlan() { a.spared = nil }

var _ actuation.Actuator = (*liveActuator)(nil)

func (a *liveActuator) DecreaseTarget(ctx context.Context, d autoscaler.DecreaseTarget) error {
	if d.Reason == "Timeout" {
		a.metrics.failedScaleUps.WithLabelValues(append([]string{"timeout"}, a.groupLabels(d.Group)...)...).Inc()
	}
	a.log.Info("lowering a target for nodes that never came", "group", d.Group, "delta", d.Delta, "reason", d.Reason, "why", d.Message)
	return a.cp.DecreaseTargetSize(ctx, d.Group, d.Delta)
}

func (a *liveActuator) DeleteInstances(ctx context.Context, d autoscaler.DeleteInstances) error {
	ids, err := a.stillUnregistered(ctx, d.ProviderIDs)
	if err != nil {
		return fmt.Errorf("reading the nodes before deleting unregistered instances of %s: %w", d.Group, err)
	}
	if n := len(d.ProviderIDs) - len(ids); n > 0 {
		if a.spared == nil {
			a.spared = map[string]int{}
		}
		a.spared[d.Group] += n
	}
	if len(ids) == 0 {
		return nil
	}
	nodes := make([]*v1.Node, len(ids))
	for i, id := range ids {
		// The provider finds instances by provider ID; the Node object
		// never existed.
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: v1.NodeSpec{ProviderID: id}}
	}
	a.log.Info("deleting instances that never registered as nodes", "group", d.Group, "instances", ids,
		"since", d.Since)
	if err := a.cp.DeleteNodes(ctx, d.Group, nodes); err != nil {
		return err
	}
	a.metrics.unregisteredRemoved.Add(float64(len(nodes)))
	for _, id := range ids {
		a.events.configMap(a.statusNamespace, a.statusName, v1.EventTypeNormal, status.EventDeleteUnregistered,
			"Removed unregistered node "+id, map[string]string{status.AnnotationNode: id, status.AnnotationNodeGroup: d.Group,
				status.AnnotationRemovalReason: status.RemovalUnregistered})
	}
	return nil
}

// stillUnregistered are the provider IDs that no Node carries, read from
// the API server: the plan judged them from the informer cache, which a
// stalled node watch can leave minutes behind, and an instance that did
// register runs pods that its deletion would take with it.
func (a *liveActuator) stillUnregistered(ctx context.Context, ids []string) ([]string, error) {
	list, err := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	registered := map[string]string{}
	for i := range list.Items {
		registered[list.Items[i].Spec.ProviderID] = list.Items[i].Name
	}
	var out []string
	for _, id := range ids {
		if node, ok := registered[id]; ok {
			a.log.Info("not deleting an instance taken for unregistered: it is registered as a node", "instance", id, "node", node)
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

func (a *liveActuator) ScaleUp(ctx context.Context, su autoscaler.ScaleUp) error {
	if su.Queued != nil {
		return a.requestQueued(ctx, su)
	}
	if n := min(a.spared[su.Group], su.Delta); n > 0 {
		// The plan lowered the target for instances that were kept:
		// growing by the full delta would overshoot the target it chose
		// (and the limits it checked).
		a.spared[su.Group] -= n
		su.Delta -= n
		a.log.Info("scaling up by fewer: instances the plan deleted as unregistered were kept", "group", su.Group,
			"kept", n, "delta", su.Delta)
		if su.Delta == 0 {
			return nil
		}
	}
	labels := a.groupLabels(su.Group)
	if err := a.cp.IncreaseSize(ctx, su.Group, su.Delta); err != nil {
		a.metrics.failedScaleUps.WithLabelValues(append([]string{"cloudProviderError"}, labels...)...).Inc()
		a.metrics.errors.WithLabelValues("cloudProviderError").Inc()
		return err
	}
	a.metrics.scaledUpNodes.WithLabelValues(labels...).Add(float64(su.Delta))
	if labels[0] != "" {
		a.metrics.scaledUpGPUNodes.WithLabelValues(labels...).Add(float64(su.Delta))
	}
	a.metrics.lastActivity.WithLabelValues("scaleUp").Set(float64(a.clock.Now().Unix()))
	a.log.Info("scaled up", "group", su.Group, "from", su.NewTarget-su.Delta, "to", su.NewTarget, "why", su.Why)
	a.events.configMap(a.statusNamespace, a.statusName, v1.EventTypeNormal, status.EventScaledUpGroup,
		fmt.Sprintf("Scale-up: setting group %s size to %d instead of %d", su.Group, su.NewTarget, su.NewTarget-su.Delta),
		map[string]string{status.AnnotationNodeGroup: su.Group})
	return nil
}

// requestQueued asks the cloud's queue for a ProvisioningRequest's nodes.
func (a *liveActuator) requestQueued(ctx context.Context, su autoscaler.ScaleUp) error {
	q, ok := a.cp.(cloudprovider.QueuedCapacity)
	if !ok {
		return fmt.Errorf("node group %s: the %s cloud provider takes no queued capacity", su.Group, a.cp.Name())
	}
	if err := q.RequestQueued(ctx, su.Group, su.Queued.Name, su.Delta, su.Queued.RunDuration); err != nil {
		a.metrics.errors.WithLabelValues("cloudProviderError").Inc()
		return err
	}
	a.log.Info("asked for queued capacity", "group", su.Group, "nodes", su.Delta, "request", su.Queued.Name,
		"runDuration", su.Queued.RunDuration, "why", su.Why)
	a.events.configMap(a.statusNamespace, a.statusName, v1.EventTypeNormal, status.EventScaledUpGroup,
		fmt.Sprintf("Scale-up: queued request %s for %d node(s) of group %s", su.Queued.Name, su.Delta, su.Group),
		map[string]string{status.AnnotationNodeGroup: su.Group})
	return nil
}

// template is a group's template node, nil when unknown.
func (a *liveActuator) groupLabels(group string) []string {
	for _, g := range a.cp.NodeGroups() {
		if g.ID == group {
			return gpuLabels(g.Template, g.TemplateSlices)
		}
	}
	return gpuLabels(nil, nil)
}

// templateSlices are the template ResourceSlices of the groups of r's
// nodes, read here on the loop's goroutine for the removal's metric labels.
func (a *liveActuator) templateSlices(r autoscaler.RemoveNodes) map[string][]*resourceapi.ResourceSlice {
	want := map[string]bool{}
	for _, rm := range r.Removals {
		want[rm.Group] = true
	}
	out := map[string][]*resourceapi.ResourceSlice{}
	for _, g := range a.cp.NodeGroups() {
		if want[g.ID] && len(g.TemplateSlices) > 0 {
			out[g.ID] = g.TemplateSlices
		}
	}
	return out
}

func (a *liveActuator) SoftTaint(ctx context.Context, t autoscaler.SoftTaint) error {
	taint := deletionCandidateTaint(a.clock.Now())
	return perNode(t.Nodes, a.apiConcurrency, func(n string) error {
		return putTaint(ctx, a.client, n, taint, a.owner(), false)
	})
}

func (a *liveActuator) SoftUntaint(ctx context.Context, t autoscaler.SoftUntaint) error {
	return perNode(t.Nodes, a.apiConcurrency, func(n string) error {
		return removeTaint(ctx, a.client, n, disruption.TaintDeletionCandidate)
	})
}

func (a *liveActuator) Cordon(ctx context.Context, c autoscaler.Cordon) error {
	taint := v1.Taint{Key: autoscaler.TaintConsolidating, Value: strconv.FormatInt(a.clock.Now().Unix(), 10), Effect: v1.TaintEffectNoSchedule}
	return perNode(c.Nodes, a.apiConcurrency, func(n string) error {
		if err := putTaint(ctx, a.client, n, taint, a.owner(), false); err != nil {
			return err
		}
		a.events.node(n, v1.EventTypeNormal, status.EventConsolidationReplace, c.Reason, nil)
		return nil
	})
}

func (a *liveActuator) Uncordon(ctx context.Context, c autoscaler.Uncordon) error {
	return perNode(c.Nodes, a.apiConcurrency, func(n string) error {
		if err := removeTaint(ctx, a.client, n, autoscaler.TaintConsolidating); err != nil {
			return err
		}
		a.events.node(n, v1.EventTypeNormal, status.EventConsolidationGivenUp, c.Reason, nil)
		return nil
	})
}

// RemoveNodes runs the batch in the background (removal.go).
// Nodes being taken away are drained on their own, by their notice
// (interruption.go).
func (a *liveActuator) RemoveNodes(ctx context.Context, r autoscaler.RemoveNodes) {
	var voluntary []disruption.Removal
	for _, rm := range r.Removals {
		if rm.Interruption == "" {
			voluntary = append(voluntary, rm)
			continue
		}
		a.drains.Add(1)
		go func() {
			defer a.drains.Done()
			a.drainInterrupted(ctx, rm, r.MaxGracefulTermination)
		}()
	}
	if len(voluntary) == 0 {
		return
	}
	r.Removals = voluntary
	slices := a.templateSlices(r)
	a.drains.Add(1)
	go func() {
		defer a.drains.Done()
		a.removeBatch(ctx, r, slices)
	}()
}

// wait returns once every background removal has ended.
func (a *liveActuator) wait() { a.drains.Wait() }
