package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

// RunOnce runs one loop: refresh the provider, snapshot the caches, plan,
// act, report.
func (c *Controller) RunOnce(ctx context.Context) error {
	start := c.clock.Now()
	defer func() {
		c.metrics.duration.WithLabelValues("main").Observe(c.clock.Since(start).Seconds())
		c.metrics.lastActivity.WithLabelValues("main").Set(float64(c.clock.Now().Unix()))
		c.mu.Lock()
		c.lastLoop = c.clock.Now()
		c.mu.Unlock()
	}()
	c.applyDrainResults()
	if err := c.cp.Refresh(ctx); err != nil {
		return fmt.Errorf("cloud provider %s: refresh: %w", c.cp.Name(), err)
	}
	c.handleFailedCreations(ctx, start)
	c.refreshPriorities(ctx)
	v, err := buildView(c.listers, c.cp)
	if err != nil {
		return err
	}
	c.metrics.duration.WithLabelValues("snapshot").Observe(c.clock.Since(start).Seconds())
	planStart := c.clock.Now()
	plan, err := c.auto.RunOnce(autoscaler.Input{
		Now: start, Snapshot: v.snap, Pending: v.pending, DaemonSets: v.daemonSets, PDBs: v.pdbs, Replicas: v.replicas,
		Deleting: c.inFlight(),
	})
	if err != nil {
		return err
	}
	c.metrics.duration.WithLabelValues("plan").Observe(c.clock.Since(planStart).Seconds())
	actStart := c.clock.Now()
	c.actScaleUp(ctx, v, plan.ScaleUp)
	c.actScaleDown(ctx, v, plan.ScaleDown)
	c.metrics.duration.WithLabelValues("actuate").Observe(c.clock.Since(actStart).Seconds())
	c.report(v, plan)
	if c.opts.WriteStatusConfigMap {
		status := buildStatus(start, v, plan, c.auto.State())
		if err := writeStatus(ctx, c.client, c.opts.Namespace, c.opts.StatusConfigMapName, status); err != nil {
			return fmt.Errorf("status ConfigMap %s/%s: %w", c.opts.Namespace, c.opts.StatusConfigMapName, err)
		}
	}
	return nil
}

// handleFailedCreations backs off groups whose cloud refused to create
// nodes (out of capacity, over quota) and gives back the target those nodes
// held, so this loop's scale-up turns to the expander's next option instead
// of waiting out --max-node-provision-time.
func (c *Controller) handleFailedCreations(ctx context.Context, now time.Time) {
	r, ok := c.cp.(cloudprovider.CreationFailureReporter)
	if !ok {
		return
	}
	for _, f := range r.FailedCreations() {
		reason := fmt.Sprintf("%s: %d node(s) not created: %s %s", f.Class, f.Count, f.Code, f.Message)
		c.auto.State().RecordFailure(f.Group, reason, now)
		c.metrics.failedScaleUps.WithLabelValues("cloud_provider_error").Inc()
		c.log.Error("node creation failed; backing the group off", "group", f.Group, "count", f.Count,
			"class", f.Class, "code", f.Code, "message", f.Message)
		if f.Count > 0 {
			if err := c.cp.DecreaseTargetSize(ctx, f.Group, f.Count); err != nil {
				c.log.Error("lowering the target after failed creations", "group", f.Group, "delta", f.Count, "err", err)
			}
		}
	}
}

// actScaleUp shrinks timed-out targets, grows groups and tells pods.
func (c *Controller) actScaleUp(ctx context.Context, v *view, p scaleup.Plan) {
	now := c.clock.Now()
	for _, s := range p.Shrinks {
		c.metrics.failedScaleUps.WithLabelValues("timeout").Inc()
		if err := c.cp.DecreaseTargetSize(ctx, s.Group, s.Delta); err != nil {
			c.log.Error("shrinking target after a failed scale-up", "group", s.Group, "delta", s.Delta, "err", err)
		}
	}
	var done []string
	for _, su := range p.ScaleUps {
		if err := c.cp.IncreaseSize(ctx, su.Group, su.Delta); err != nil {
			c.metrics.failedScaleUps.WithLabelValues("cloud_provider_error").Inc()
			c.auto.State().RecordFailure(su.Group, err.Error(), now)
			c.log.Error("scale-up failed", "group", su.Group, "delta", su.Delta, "err", err)
			continue
		}
		c.auto.State().RecordScaleUp(su.Group, su.Delta, now)
		c.metrics.scaledUpNodes.Add(float64(su.Delta))
		if g := v.snap.NodeGroup(su.Group); g != nil && g.Template != nil && gpu.Allocatable(g.Template) > 0 {
			c.metrics.scaledUpGPUNodes.Add(float64(su.Delta))
		}
		c.metrics.lastActivity.WithLabelValues("scaleUp").Set(float64(now.Unix()))
		c.log.Info("scaled up", "group", su.Group, "from", su.NewTarget-su.Delta, "to", su.NewTarget, "pods", su.Pods, "why", su.Why)
		done = append(done, fmt.Sprintf("{%s %d->%d (max: %d)}", su.Group, su.NewTarget-su.Delta, su.NewTarget, v.snap.NodeGroup(su.Group).MaxSize))
	}
	if len(done) > 0 {
		msg := "pod triggered scale-up: [" + strings.Join(done, " ") + "]"
		for _, pod := range p.Triggered {
			c.podEvent(pod, v1.EventTypeNormal, "TriggeredScaleUp", msg)
		}
	}
	for _, pp := range p.Pending {
		msg := "pod didn't trigger scale-up: " + pp.Message()
		for _, pod := range pp.Pods {
			c.podEvent(pod, v1.EventTypeNormal, "NotTriggerScaleUp", msg)
		}
	}
	for _, name := range p.GPUOverdue {
		if ni := v.snap.Node(name); ni != nil {
			c.nodeEvent(ni.Node, v1.EventTypeWarning, "GPUsNotAdvertised", fmt.Sprintf(
				"node registered %s ago without allocatable GPUs; no longer counted as upcoming (--max-node-startup-time %s)",
				now.Sub(ni.Node.CreationTimestamp.Time).Round(1e9), c.opts.Autoscaler.ClusterState.MaxNodeStartupTime))
		}
	}
}

// actScaleDown applies soft taints and starts removals; drains run in the
// background and report back through the state.
func (c *Controller) actScaleDown(ctx context.Context, v *view, p scaledown.Plan) {
	now := c.clock.Now()
	for _, n := range p.SoftTaint {
		if err := addTaint(ctx, c.client, n, deletionCandidateTaint(now)); err != nil {
			c.log.Error("soft taint", "node", n, "err", err)
		}
	}
	for _, n := range p.SoftUntaint {
		if err := removeTaint(ctx, c.client, n, scaledown.TaintDeletionCandidate); err != nil {
			c.log.Error("soft untaint", "node", n, "err", err)
		}
	}
	for _, r := range p.Delete {
		ni := v.snap.Node(r.Node)
		if ni == nil || !c.startDeletion(r) {
			continue
		}
		node := ni.Node.DeepCopy()
		c.drains.Add(1)
		go func() {
			defer c.drains.Done()
			c.remove(ctx, node, r, p)
		}()
	}
}

func (c *Controller) startDeletion(r scaledown.Removal) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.deleting[r.Node]; busy {
		return false
	}
	c.deleting[r.Node] = scaledown.Deletion{Node: r.Node, Group: r.Group, Drain: !r.Empty}
	return true
}

func (c *Controller) inFlight() []scaledown.Deletion {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]scaledown.Deletion, 0, len(c.deleting))
	for _, d := range c.deleting {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// remove taints, drains and deletes one node. On failure the taint comes
// off again so the node is usable, and scale-down pauses for
// --scale-down-delay-after-failure.
func (c *Controller) remove(ctx context.Context, node *v1.Node, r scaledown.Removal, p scaledown.Plan) {
	defer func() {
		c.mu.Lock()
		delete(c.deleting, r.Node)
		c.mu.Unlock()
	}()
	fail := func(step string, err error) {
		c.log.Error("scale-down failed", "node", r.Node, "step", step, "err", err)
		c.nodeEvent(node, v1.EventTypeWarning, "ScaleDownFailed", fmt.Sprintf("%s: %v", step, err))
		if uerr := removeTaint(context.WithoutCancel(ctx), c.client, r.Node, scaledown.TaintToBeDeleted); uerr != nil {
			c.log.Error("removing taint after a failed scale-down", "node", r.Node, "err", uerr)
		}
		c.finished(drainResult{failed: true, at: c.clock.Now()})
	}
	if err := addTaint(ctx, c.client, r.Node, toBeDeletedTaint(c.clock.Now())); err != nil {
		fail("tainting "+scaledown.TaintToBeDeleted, err)
		return
	}
	c.nodeEvent(node, v1.EventTypeNormal, "ScaleDown", removalMessage(r))
	pods := make([]*v1.Pod, 0, len(r.Evict)+len(r.DaemonSetPods))
	for _, m := range r.Evict {
		pods = append(pods, m.Pod)
	}
	pods = append(pods, r.DaemonSetPods...)
	if len(pods) > 0 {
		o := drainOptions{MaxPodEvictionTime: c.opts.MaxPodEvictionTime, MaxGracefulTermination: p.MaxGracefulTermination, RetryInterval: retryInterval}
		if err := evictAll(ctx, c.client, c.clock, pods, o); err != nil {
			fail("draining", err)
			return
		}
	}
	if err := c.cp.DeleteNodes(ctx, r.Group, []*v1.Node{node}); err != nil {
		fail("deleting the node", err)
		return
	}
	reason := "underutilized"
	switch {
	case r.Unready:
		reason = "unready"
	case r.Empty:
		reason = "empty"
	}
	c.metrics.scaledDownNodes.WithLabelValues(reason).Inc()
	if gpu.IsGPUNode(node) {
		c.metrics.scaledDownGPU.Inc()
	}
	now := c.clock.Now()
	c.metrics.lastActivity.WithLabelValues("scaleDown").Set(float64(now.Unix()))
	c.finished(drainResult{at: now})
	c.log.Info("scaled down", "node", r.Node, "group", r.Group, "reason", reason, "evicted", len(r.Evict))
}

// drainResult is how a background removal ended.
type drainResult struct {
	failed bool
	at     time.Time
}

// finished queues a removal's outcome for the loop; only the loop touches
// the node-group state.
func (c *Controller) finished(r drainResult) {
	c.mu.Lock()
	c.results = append(c.results, r)
	c.mu.Unlock()
}

func (c *Controller) applyDrainResults() {
	c.mu.Lock()
	results := c.results
	c.results = nil
	c.mu.Unlock()
	st := c.auto.State()
	for _, r := range results {
		if r.failed {
			st.LastScaleDownFailure = r.at
		} else {
			st.LastScaleDownDelete = r.at
		}
	}
}

func removalMessage(r scaledown.Removal) string {
	if r.Empty {
		return "removing empty node"
	}
	var names []string
	for _, m := range r.Evict {
		names = append(names, m.Pod.Namespace+"/"+m.Pod.Name)
	}
	return fmt.Sprintf("removing node, evicting %d pod(s): %s", len(names), strings.Join(names, ", "))
}

func (c *Controller) podEvent(p *v1.Pod, typ, reason, msg string) {
	if c.events.allow(p.UID, reason+msg, c.clock.Now()) {
		c.recorder.Event(p, typ, reason, msg)
	}
}

func (c *Controller) nodeEvent(n *v1.Node, typ, reason, msg string) {
	if c.events.allow(n.UID, reason+msg, c.clock.Now()) {
		c.recorder.Event(n, typ, reason, msg)
	}
}

// report updates the gauges.
func (c *Controller) report(v *view, plan autoscaler.Plan) {
	ready, unready, gpuReady := 0, 0, 0
	for _, ni := range v.snap.Nodes() {
		if clusterstate.IsReady(ni.Node) {
			ready++
		} else {
			unready++
		}
		if gpu.Allocatable(ni.Node) > 0 {
			gpuReady++
		}
	}
	c.metrics.nodes.WithLabelValues("ready").Set(float64(ready))
	c.metrics.nodes.WithLabelValues("unready").Set(float64(unready))
	c.metrics.nodes.WithLabelValues("unmanaged").Set(float64(v.unmanaged))
	c.metrics.gpuNodes.WithLabelValues("ready").Set(float64(gpuReady))
	c.metrics.gpuNodes.WithLabelValues("starting").Set(float64(len(plan.ScaleUp.AwaitingGPU)))
	c.metrics.gpuNodes.WithLabelValues("overdue").Set(float64(len(plan.ScaleUp.GPUOverdue)))
	c.metrics.unschedulablePods.Set(float64(len(v.pending)))
	c.metrics.unneededNodes.Set(float64(len(plan.ScaleDown.Unneeded)))
}
