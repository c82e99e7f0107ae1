package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Each unhealthy node is a series naming the node and why, and a node that
// recovered leaves no series behind.
func TestUnhealthyNodeMetricNamesTheNodeAndWhy(t *testing.T) {
	m := newMetrics()
	at := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	st := status.Status{Time: at, Repair: &status.Repair{Nodes: []status.RepairNode{
		{Name: "gpu-1", Group: "gpu", Reason: "UnhealthyCondition", Condition: "AcceleratedHardwareReady=False", State: "Held", Held: "Tolerating"},
	}}}
	m.observe(st, &view{}, limits.Limits{})
	if got := unhealthySeries(t, m); len(got) != 1 || got[0]["node"] != "gpu-1" || got[0]["condition"] != "AcceleratedHardwareReady=False" ||
		got[0]["held"] != "Tolerating" {
		t.Fatalf("series %v, want one for gpu-1 with its condition and why it waits", got)
	}
	st.Repair.Nodes = nil
	m.observe(st, &view{}, limits.Limits{})
	if got := unhealthySeries(t, m); len(got) != 0 {
		t.Errorf("after recovery: %v, want none", got)
	}
}

func unhealthySeries(t *testing.T, m *metrics) []map[string]string {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range families {
		if f.GetName() != "gpuscale_unhealthy_node" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, labels)
		}
	}
	return out
}

// A held unhealthy node gets one Warning saying why and what holds it,
// not one per loop; a node whose removal started gets none here (its
// ScaleDown event tells it).
func TestRepairEventsSayWhyANodeIsHeld(t *testing.T) {
	at := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	rec := record.NewFakeRecorder(10)
	c := &Controller{events: &eventSink{recorder: rec, limiter: newEventLimiter(time.Minute), clock: clocktesting.NewFakeClock(at)}}
	st := status.Status{Time: at, Repair: &status.Repair{Nodes: []status.RepairNode{
		{Name: "gpu-1", Group: "gpu", Reason: "GPUsMissing", Message: "nvidia.com/gpu allocatable 6 of capacity 8", State: status.RepairHeld,
			Held: "GroupLooksBroken", HeldMessage: "3 of the group's 4 nodes are unhealthy"},
		{Name: "gpu-2", Group: "gpu", Reason: "GPUsMissing", Message: "nvidia.com/gpu allocatable 0 of capacity 8", State: status.RepairRepairing},
	}}}
	c.repairEvents(st)
	c.repairEvents(st)
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.Contains(got[0], "Warning NodeUnhealthy node repair: nvidia.com/gpu allocatable 6 of capacity 8; held (GroupLooksBroken)") {
		t.Errorf("events %q, want one Warning for the held node naming why and what holds it", got)
	}
}
