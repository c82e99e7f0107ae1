package controller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// RunOnce runs one loop: refresh the provider, snapshot the caches, hand
// the core its inputs and the outcomes of earlier actions, carry the plan
// out, report.
func (c *Controller) RunOnce(ctx context.Context) error {
	start := c.clock.Now()
	defer func() {
		c.metrics.duration.WithLabelValues("main").Observe(c.clock.Since(start).Seconds())
	}()
	if err := c.cp.Refresh(ctx); err != nil {
		c.metrics.errors.WithLabelValues("cloudProviderError").Inc()
		return fmt.Errorf("cloud provider %s: refresh: %w", c.cp.Name(), err)
	}
	c.queueFailedCreations(start)
	c.cluster.untaintOwed(ctx)
	c.taintInterrupted(ctx)
	c.refreshPriorities(ctx)
	v, err := c.mirror.sync(c.listers, c.cp)
	if err != nil {
		c.metrics.errors.WithLabelValues("internalError").Inc()
		return err
	}
	c.metrics.duration.WithLabelValues("updateClusterState").Observe(c.clock.Since(start).Seconds())
	planStart := c.clock.Now()
	pending := v.pending
	if len(c.opts.Sharding.Peers) > 0 {
		pending = c.dropClaimed(pending, c.readPeerClaims(ctx, start))
	}
	in := autoscaler.Input{Now: start, Snapshot: v.snap, Pending: pending, OtherSchedulers: v.otherSchedulers,
		DaemonSets: v.daemonSets, PDBs: v.pdbs,
		Replicas: v.replicas, Outcomes: c.outcomes.Take(), Priorities: c.priorities}
	if c.requests != nil {
		var errs []error
		in.ProvisioningRequests, errs = c.requests.list()
		for _, err := range errs {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			c.log.Error("reading ProvisioningRequests", "err", err)
		}
	}
	var buffers []bufferState
	if c.buffers != nil {
		var errs []error
		buffers, errs = c.buffers.resolve()
		for _, err := range errs {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			c.log.Error("reading CapacityBuffers", "err", err)
		}
		in.CapacityBuffers = c.buffers.ready(buffers)
	}
	if c.demand != nil {
		var err error
		if in.Demand, err = c.demand.list(); err != nil {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			c.log.Error("reading HorizontalPodAutoscalers", "err", err)
		}
	}
	plan, err := c.auto.Step(in)
	if err != nil {
		c.metrics.errors.WithLabelValues("internalError").Inc()
		return err
	}
	if c.buffers != nil {
		for _, err := range c.buffers.writeStatus(ctx, buffers, plan.Status.Buffers, metav1.NewTime(start.Truncate(time.Second))) {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			c.log.Error("writing CapacityBuffer status", "err", err)
		}
	}
	if c.opts.Recorder != nil {
		c.opts.Recorder.Record(in, plan)
	}
	c.metrics.duration.WithLabelValues("plan").Observe(c.clock.Since(planStart).Seconds())
	actStart := c.clock.Now()
	c.cluster.newPlan()
	res := actuation.Carry(ctx, c.actuator, c.clock, plan.Actions)
	c.outcomes.Hold(res.Outcomes...)
	for _, err := range res.Errors {
		c.metrics.errors.WithLabelValues("cloudProviderError").Inc()
		c.log.Error("carrying out the plan", "err", err)
	}
	c.metrics.lastActivity.WithLabelValues("autoscaling").Set(float64(planStart.Unix()))
	c.metrics.duration.WithLabelValues("actuate").Observe(c.clock.Since(actStart).Seconds())
	c.report(v, plan)
	if c.opts.WriteStatusConfigMap {
		ro := c.opts.Status
		var extra map[string]string
		if len(c.opts.Sharding.Peers) > 0 {
			claims := c.updateClaims(start, v.pending, plan)
			extra = map[string]string{ClaimsKey: claims}
			ro.MaxBytes -= len(claims)
		}
		doc, text := status.Render(plan.Status, c.lastStatus, ro)
		if err := writeStatus(ctx, c.client, c.opts.Namespace, c.opts.StatusConfigMapName, doc, text, extra); err != nil {
			c.metrics.errors.WithLabelValues("apiCallError").Inc()
			return fmt.Errorf("status ConfigMap %s/%s: %w", c.opts.Namespace, c.opts.StatusConfigMapName, err)
		}
		c.lastStatus = doc
	}
	c.mu.Lock()
	c.lastLoop = c.clock.Now()
	c.mu.Unlock()
	c.metrics.lastActivity.WithLabelValues("main").Set(float64(c.clock.Now().Unix()))
	return nil
}

// queueFailedCreations hands the core the nodes the cloud refused to
// create (out of capacity, over quota), so this loop backs their group off
// and turns to the expander's next choice without waiting out
// --max-node-provision-time.
func (c *Controller) queueFailedCreations(now time.Time) {
	r, ok := c.cp.(cloudprovider.CreationFailureReporter)
	if !ok {
		return
	}
	for _, f := range r.FailedCreations() {
		c.metrics.failedScaleUps.WithLabelValues(append([]string{"cloudProviderError"}, c.cluster.groupLabels(f.Group)...)...).Inc()
		c.metrics.failedCreations.WithLabelValues(f.Class).Add(float64(f.Count))
		c.log.Error("node creation failed; backing the group off", "group", f.Group, "count", f.Count,
			"class", f.Class, "code", f.Code, "message", f.Message, "zone", f.Zone)
		c.events.configMap(c.opts.Namespace, c.opts.StatusConfigMapName, v1.EventTypeWarning, status.EventFailedToScaleUpGroup,
			creationFailureMessage(f), map[string]string{status.AnnotationNodeGroup: f.Group})
		c.outcomes.Hold(autoscaler.CreationFailed{Group: f.Group, Count: f.Count, Class: f.Class, Code: f.Code,
			Message: f.Message, Zone: f.Zone, At: now})
	}
}

// creationFailureMessage says which group failed, where, and what the
// cloud answered.
func creationFailureMessage(f cloudprovider.FailedCreations) string {
	where := ""
	if f.Zone != "" {
		where = " in " + f.Zone
	}
	return fmt.Sprintf("Scale-up failed for group %s%s: %d node(s) not created (%s): %s %s; the group is backed off",
		f.Group, where, f.Count, f.Class, f.Code, f.Message)
}
