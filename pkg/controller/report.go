package controller

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// report turns the loop's status into events and gauges.
func (c *Controller) report(v *view, plan autoscaler.Plan) {
	st := plan.Status
	c.podEvents(st)
	c.repairEvents(st)
	for _, name := range st.DevicesOverdue {
		c.events.node(name, v1.EventTypeWarning, status.EventGPUsNotAdvertised, fmt.Sprintf(
			"node registered without allocatable accelerators for longer than --max-node-startup-time %s; no longer counted as upcoming",
			c.opts.Autoscaler.ClusterState.MaxNodeStartupTime), nil)
	}
	if !st.Cluster.Health.Safe {
		c.log.Warn("cluster is unhealthy; not scaling", "reason", st.Cluster.Health.Reason, "why", st.Cluster.Health.Message)
		c.events.configMap(c.opts.Namespace, c.opts.StatusConfigMapName, v1.EventTypeWarning, status.EventClusterUnhealthy, st.Cluster.Health.Message, nil)
	}
	c.metrics.observe(st, v, c.opts.Autoscaler.Limits)
}

// podEventsPerLoop bounds the pod events of one loop: with tens of
// thousands of pending pods an event each would flood the API server.
// Pods left out get theirs in the next loops (the limiter remembers which
// were told), and the status names every group of pods at once.
const podEventsPerLoop = 200

// podEvents tells triggering pods which scale-ups they caused, and pending
// pods why none helps them.
func (c *Controller) podEvents(st status.Status) {
	budget := podEventsPerLoop
	if len(st.ScaleUps) > 0 {
		parts := make([]string, len(st.ScaleUps))
		for i, su := range st.ScaleUps {
			max := 0
			for _, g := range st.NodeGroups {
				if g.ID == su.Group {
					max = g.Max
				}
			}
			parts[i] = fmt.Sprintf("{%s %d->%d (max: %d)}", su.Group, su.From, su.To, max)
		}
		msg := "pod triggered scale-up: [" + strings.Join(parts, " ") + "]"
		// The options the expanders weighed ride along as data, so that
		// explain can say why a group was chosen over another after the
		// status has moved on.
		var annotations map[string]string
		if data, err := json.Marshal(status.NewEventScaleUps(st.ScaleUps)); err == nil {
			annotations = map[string]string{status.AnnotationScaleUps: string(data)}
		}
		for _, p := range st.Triggered {
			if budget > 0 && c.events.pod(p, v1.EventTypeNormal, status.EventTriggeredScaleUp, msg, annotations) {
				budget--
			}
		}
	}
	for _, pp := range st.Pending {
		msg := "pod didn't trigger scale-up: " + pp.Message()
		for _, p := range pp.Pods {
			if budget > 0 && c.events.pod(p, v1.EventTypeNormal, status.EventNotTriggerScaleUp, msg, nil) {
				budget--
			}
		}
	}
}
