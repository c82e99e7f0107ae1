package autoscaler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/repair"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// repairCluster is a group of three 8-GPU nodes, each running one replicated
// pod, with gpu-1's accelerators failed (AcceleratedHardwareReady=False)
// since t0. Scale-down is off, so only repair removes anything.
func repairCluster(t *testing.T, min int, repairOn bool) (*autoscaler.Autoscaler, *snapshot.Snapshot) {
	t.Helper()
	a := newAutoscaler(t, func(o *autoscaler.Options) {
		o.ScaleDownEnabled = false
		o.Repair.Enabled = repairOn
		o.Repair.MaxPercentage = 50
	})
	s := snapshot.New()
	if err := s.SetNodeGroup(builder.NodeGroup("gpu").Min(min).Max(10).Target(3).Template(builder.Node("t").GPU(8).Build()).Build()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		n := builder.Node(fmt.Sprintf("gpu-%d", i)).GPU(8).Build()
		n.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		if i == 1 {
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: "AcceleratedHardwareReady",
				Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0), Reason: "NvidiaXID79Error"})
		}
		if err := s.AddNodeInGroup(n, "gpu"); err != nil {
			t.Fatal(err)
		}
		if err := s.AddPod(owned(builder.Pod(fmt.Sprintf("w-%d", i)).CPU("1").GPU(1).OnNode(n.Name).Build())); err != nil {
			t.Fatal(err)
		}
	}
	return a, s
}

func TestRepairRemovesABrokenNodeAfterItsTolerationTime(t *testing.T) {
	a, s := repairCluster(t, 0, true)
	plan := step(t, a, autoscaler.Input{Now: t0.Add(5 * time.Minute), Snapshot: s})
	if got := summary(plan); got != "" {
		t.Fatalf("at 5m: %q, want nothing before the 10m toleration", got)
	}
	if r := plan.Status.Repair; r == nil || len(r.Nodes) != 1 || r.Nodes[0].Name != "gpu-1" || r.Nodes[0].Held != repair.HeldTolerating {
		t.Fatalf("status at 5m: %+v, want gpu-1 tolerated", r)
	}
	if due := t0.Add(10 * time.Minute); !plan.NextDecisionAt.Equal(due) {
		t.Errorf("NextDecisionAt %v, want the end of the toleration %v", plan.NextDecisionAt, due)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Minute), Snapshot: s})
	if got := summary(plan); got != "remove gpu-1" {
		t.Fatalf("at 10m: %q, want gpu-1 removed", got)
	}
	for _, act := range plan.Actions {
		if rm, ok := act.(autoscaler.RemoveNodes); ok {
			if r := rm.Removals[0]; !strings.Contains(r.Repair, "AcceleratedHardwareReady=False") || len(r.Evict) != 1 {
				t.Errorf("removal %+v: want the condition named and w-1 evicted", r)
			}
		}
	}
	if r := plan.Status.Repair; r.Nodes[0].State != repair.StateRepairing {
		t.Errorf("status at 10m: %+v", r.Nodes[0])
	}
	// In flight: not removed twice.
	plan = step(t, a, autoscaler.Input{Now: t0.Add(11 * time.Minute), Snapshot: s})
	if got := summary(plan); got != "" || plan.Status.Repair.Nodes[0].State != repair.StateRemoving {
		t.Errorf("at 11m: %q, %+v; want nothing new, gpu-1 being removed", got, plan.Status.Repair.Nodes[0])
	}
}

func TestRepairOrdersTheReplacementFirstAtMinimumSize(t *testing.T) {
	a, s := repairCluster(t, 3, true)
	if got := summary(step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Minute), Snapshot: s})); got != "scale-up gpu+1; remove gpu-1" {
		t.Errorf("group at its minimum: %q, want its replacement ordered, then gpu-1 removed", got)
	}
}

func TestRepairIsOffByDefault(t *testing.T) {
	if autoscaler.DefaultOptions().Repair.Enabled {
		t.Fatal("node repair is on by default")
	}
	a, s := repairCluster(t, 0, false)
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Hour), Snapshot: s})
	if got := summary(plan); got != "" || plan.Status.Repair != nil {
		t.Errorf("repair off: %q, status %+v", got, plan.Status.Repair)
	}
}

// Two broken nodes of a group at its minimum size: each gets its own
// replacement, the second on top of the first.
func TestRepairOrdersOneReplacementPerNodeAtMinimumSize(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) {
		o.ScaleDownEnabled = false
		o.Repair.Enabled, o.Repair.MaxPercentage, o.Repair.OkUnhealthyCount = true, 100, 5
	})
	_, s := repairCluster(t, 3, true)
	s.Node("gpu-0").Node.Status.Conditions = append(s.Node("gpu-0").Node.Status.Conditions, v1.NodeCondition{
		Type: "GpuXidError", Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)})
	plan := step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Minute), Snapshot: s})
	if got := summary(plan); got != "scale-up gpu+1; scale-up gpu+1; remove gpu-0,gpu-1" {
		t.Fatalf("%q, want a replacement for each, then both removed", got)
	}
	var targets []int
	for _, act := range plan.Actions {
		if su, ok := act.(autoscaler.ScaleUp); ok {
			targets = append(targets, su.NewTarget)
		}
	}
	if fmt.Sprint(targets) != "[4 5]" {
		t.Errorf("new targets %v, want [4 5]", targets)
	}
}
