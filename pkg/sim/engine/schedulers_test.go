package engine_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// otherScheduler is three 2-cpu Jobs whose pods name another scheduler.
const otherScheduler = `
name: other-scheduler
duration: 30m
nodeGroups:
- name: cpu
  maxSize: 5
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: batch
  pod: {requests: {cpu: "2"}, schedulerName: volcano}
  jobs: [{at: 0s, count: 3, duration: 1h}]
`

type lastStatus struct{ plan autoscaler.Plan }

func (l *lastStatus) Record(_ autoscaler.Input, plan autoscaler.Plan) { l.plan = plan }

// Pods of a scheduler the autoscaler does not act for never grow the
// cluster, and the status counts them; listed in
// --bypassed-scheduler-names, they do.
func TestPodsOfOtherSchedulers(t *testing.T) {
	rec := &lastStatus{}
	res := run(t, parse(t, otherScheduler), func(o *engine.Options) { o.Recorder = rec })
	if res.NodesAdded != 0 || res.Unscheduled != 3 {
		t.Errorf("left alone: added %d nodes, %d pods unscheduled; want 0 and 3", res.NodesAdded, res.Unscheduled)
	}
	if o := rec.plan.Status.OtherSchedulers; len(o) != 1 || o[0].Scheduler != "volcano" || o[0].Pods != 3 {
		t.Errorf("status other schedulers %+v, want volcano: 3", o)
	}
	bypassed := run(t, parse(t, otherScheduler+"autoscaler: {bypassed-scheduler-names: volcano}\n"))
	if bypassed.NodesAdded != 2 || bypassed.Unscheduled != 0 {
		t.Errorf("bypassed: added %d nodes, %d pods unscheduled; want 2 and 0", bypassed.NodesAdded, bypassed.Unscheduled)
	}
}
