package repair_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/repair"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// cluster is a GPU group of size nodes, gpu-0 .. gpu-<size-1>, each
// running one replicated pod, created an hour before t0.
type cluster struct {
	t *testing.T
	s *snapshot.Snapshot
}

func newCluster(t *testing.T, size, min int) *cluster {
	t.Helper()
	c := &cluster{t: t, s: snapshot.New()}
	tmpl := builder.Node("gpu-t").GPU(8).Build()
	if err := c.s.SetNodeGroup(builder.NodeGroup("gpu").Min(min).Max(20).Target(size).Template(tmpl).Build()); err != nil {
		t.Fatal(err)
	}
	for i := range size {
		n := builder.Node(fmt.Sprintf("gpu-%d", i)).GPU(8).Build()
		n.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		if err := c.s.AddNodeInGroup(n, "gpu"); err != nil {
			t.Fatal(err)
		}
		c.pod(fmt.Sprintf("w-%d", i), n.Name, nil)
	}
	return c
}

func (c *cluster) pod(name, node string, annotations map[string]string) {
	c.t.Helper()
	p := builder.Pod(name).CPU("1").GPU(1).OnNode(node).Build()
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID("rs"), Controller: &yes}}
	p.Annotations = annotations
	if err := c.s.AddPod(p); err != nil {
		c.t.Fatal(err)
	}
}

// condition sets a condition on a node, changed at since.
func (c *cluster) condition(node string, typ v1.NodeConditionType, status v1.ConditionStatus, since time.Time) {
	n := c.s.Node(node).Node
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: typ, Status: status,
		LastTransitionTime: metav1.NewTime(since), Reason: "GPUFailed", Message: "injected"})
}

// loseGPUs takes n of a node's GPUs out of allocatable, capacity unchanged.
func (c *cluster) loseGPUs(node string, n int64) {
	nd := c.s.Node(node).Node
	left := nd.Status.Capacity.Name("nvidia.com/gpu", resource.DecimalSI).Value() - n
	nd.Status.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(left, resource.DecimalSI)
}

func planner(t *testing.T, mutate ...func(*repair.Options)) *repair.Planner {
	t.Helper()
	o := repair.DefaultOptions()
	o.Enabled = true
	o.Drain = drain.DefaultOptions()
	for _, m := range mutate {
		m(&o)
	}
	p, err := repair.NewPlanner(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// repaired lists the nodes a plan removes, and held each other unhealthy
// node's Held code.
func repaired(p repair.Plan) (string, map[string]string) {
	var names []string
	for _, r := range p.Repairs {
		names = append(names, r.Removal.Node)
	}
	held := map[string]string{}
	for _, n := range p.Nodes {
		if n.State == repair.StateHeld {
			held[n.Name] = n.Held
		}
	}
	return strings.Join(names, ","), held
}

func TestRepairAfterTheConditionsTolerationAndNotBefore(t *testing.T) {
	c := newCluster(t, 10, 0)
	c.condition("gpu-3", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	p := planner(t)
	before := p.Plan(repair.Input{Now: t0.Add(10*time.Minute - time.Second), Snapshot: c.s})
	if got, held := repaired(before); got != "" || held["gpu-3"] != repair.HeldTolerating {
		t.Fatalf("before 10m: repaired %q, held %v; want none, gpu-3 %s", got, held, repair.HeldTolerating)
	}
	at := p.Plan(repair.Input{Now: t0.Add(10 * time.Minute), Snapshot: c.s})
	if got, _ := repaired(at); got != "gpu-3" {
		t.Fatalf("at 10m: repaired %q, want gpu-3", got)
	}
	rm := at.Repairs[0].Removal
	if len(rm.Evict) != 1 || rm.Evict[0].Pod.Name != "w-3" || rm.Empty || at.Repairs[0].Replace ||
		!strings.Contains(rm.Repair, "AcceleratedHardwareReady=False") {
		t.Errorf("removal %+v: want w-3 evicted, the condition named, no replacement first", rm)
	}
}

func TestRepairOfGPUsThatLeftAllocatableCountsFromFirstSeen(t *testing.T) {
	c := newCluster(t, 10, 0)
	c.loseGPUs("gpu-1", 2)
	p := planner(t, func(o *repair.Options) { o.MissingGPUsAfter = 5 * time.Minute })
	first := p.Plan(repair.Input{Now: t0, Snapshot: c.s})
	if got, held := repaired(first); got != "" || held["gpu-1"] != repair.HeldTolerating || !first.Seen["gpu-1"].Equal(t0) {
		t.Fatalf("first seen: repaired %q, held %v, seen %v", got, held, first.Seen)
	}
	if n := first.Nodes[0]; n.Reason != repair.ReasonGPUsMissing || !strings.Contains(n.Message, "allocatable 6 of capacity 8") {
		t.Errorf("finding %+v: want %s naming 6 of 8", n, repair.ReasonGPUsMissing)
	}
	later := p.Plan(repair.Input{Now: t0.Add(5 * time.Minute), Snapshot: c.s, Seen: first.Seen})
	if got, _ := repaired(later); got != "gpu-1" {
		t.Fatalf("after 5m: repaired %q, want gpu-1", got)
	}
	// A node whose GPUs come back is forgotten.
	c.loseGPUs("gpu-1", 0)
	if healed := p.Plan(repair.Input{Now: t0.Add(6 * time.Minute), Snapshot: c.s, Seen: later.Seen}); len(healed.Nodes) != 0 || len(healed.Seen) != 0 {
		t.Errorf("healed node: %+v", healed)
	}
}

func TestRepairShareCapsRepairsPerGroup(t *testing.T) {
	c := newCluster(t, 10, 0)
	c.condition("gpu-4", "GpuXidError", v1.ConditionTrue, t0)
	c.condition("gpu-7", "GpuXidError", v1.ConditionTrue, t0)
	now := t0.Add(time.Hour)
	p := planner(t)
	got, held := repaired(p.Plan(repair.Input{Now: now, Snapshot: c.s}))
	if got != "gpu-4" || held["gpu-7"] != repair.HeldShare {
		t.Fatalf("10%% of 10 nodes: repaired %q, held %v; want gpu-4 and gpu-7 %s", got, held, repair.HeldShare)
	}
	// With gpu-4's repair in flight, gpu-7 still waits; once it is done, gpu-7 goes.
	inFlight := []repair.Disrupting{{Node: "gpu-4", Group: "gpu", Repair: true}}
	if got, held := repaired(p.Plan(repair.Input{Now: now, Snapshot: c.s, Disrupting: inFlight})); got != "" || held["gpu-7"] != repair.HeldShare {
		t.Errorf("one in flight: repaired %q, held %v", got, held)
	}
	if got, _ := repaired(planner(t, func(o *repair.Options) { o.MaxPercentage = 20 }).Plan(repair.Input{Now: now, Snapshot: c.s})); got != "gpu-4,gpu-7" {
		t.Errorf("20%%: repaired %q, want both", got)
	}
}

// A node tainted for deletion a moment ago (by an earlier instance, before
// a restart) is being removed: it is not removed a second time.
func TestRepairLeavesANodeBeingRemovedAlone(t *testing.T) {
	c := newCluster(t, 10, 0)
	c.condition("gpu-4", "GpuXidError", v1.ConditionTrue, t0)
	now := t0.Add(time.Hour)
	c.s.Node("gpu-4").Node.Spec.Taints = []v1.Taint{{Key: disruption.TaintToBeDeleted, Value: fmt.Sprint(now.Add(-time.Minute).Unix()),
		Effect: v1.TaintEffectNoSchedule}}
	p := planner(t, func(o *repair.Options) { o.MaxCloudProviderNodeDeletionTime = 5 * time.Minute })
	plan := p.Plan(repair.Input{Now: now, Snapshot: c.s})
	if len(plan.Repairs) != 0 || len(plan.Nodes) != 1 || plan.Nodes[0].State != repair.StateRemoving {
		t.Errorf("repairs %v, nodes %+v; want gpu-4 left to the removal in flight", plan.Repairs, plan.Nodes)
	}
}

func TestRepairHealthBrakeHoldsABrokenGroup(t *testing.T) {
	c := newCluster(t, 4, 0)
	c.condition("gpu-0", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	c.condition("gpu-2", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	p := planner(t, func(o *repair.Options) { o.MaxPercentage = 100 })
	got, held := repaired(p.Plan(repair.Input{Now: t0.Add(time.Hour), Snapshot: c.s}))
	if got != "" || held["gpu-0"] != repair.HeldGroupBroken || held["gpu-2"] != repair.HeldGroupBroken {
		t.Fatalf("2 of 4 unhealthy: repaired %q, held %v; want none, both %s", got, held, repair.HeldGroupBroken)
	}
	// One unhealthy node is within --repair-ok-unhealthy-count: repaired.
	c2 := newCluster(t, 4, 0)
	c2.condition("gpu-0", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	if got, _ := repaired(p.Plan(repair.Input{Now: t0.Add(time.Hour), Snapshot: c2.s})); got != "gpu-0" {
		t.Errorf("1 of 4 unhealthy: repaired %q, want gpu-0", got)
	}
}

func TestRepairObeysDisruptionBudgetsWindowsAndDoNotDisrupt(t *testing.T) {
	now := t0.Add(time.Hour)
	budget, err := disruption.ParseBudget("nodes=1")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := disruption.ParseWindow("schedule=0 2 * * *;duration=1h") // 02:00-03:00 UTC; now is 13:00
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		policy     disruption.Policy
		disrupting []repair.Disrupting
		setup      func(*cluster)
		want       string
	}{
		{name: "budget spent by a scale-down in flight", policy: disruption.Policy{Budgets: []disruption.Budget{budget}},
			disrupting: []repair.Disrupting{{Node: "gpu-9", Group: "gpu"}}, want: repair.HeldBudget},
		{name: "window closed", policy: disruption.Policy{Windows: []disruption.Window{closed}}, want: repair.HeldWindow},
		{name: "pod annotated do-not-disrupt", setup: func(c *cluster) {
			c.pod("train", "gpu-1", map[string]string{drain.AnnotationDoNotDisrupt: "true"})
		}, want: repair.HeldPod},
		{name: "node annotated do-not-disrupt", setup: func(c *cluster) {
			c.s.Node("gpu-1").Node.Annotations = map[string]string{drain.AnnotationKarpenterDoNotDisrupt: "true"}
		}, want: repair.HeldDoNotDisrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 10, 0)
			c.condition("gpu-1", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
			if tc.setup != nil {
				tc.setup(c)
			}
			p := planner(t, func(o *repair.Options) { o.Disruption = tc.policy })
			got, held := repaired(p.Plan(repair.Input{Now: now, Snapshot: c.s, Disrupting: tc.disrupting}))
			if got != "" || held["gpu-1"] != tc.want {
				t.Errorf("repaired %q, held %v; want gpu-1 held %s", got, held, tc.want)
			}
		})
	}
}

func TestRepairAtMinimumSizeOrdersTheReplacementFirst(t *testing.T) {
	c := newCluster(t, 2, 2)
	c.condition("gpu-0", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	p := planner(t, func(o *repair.Options) { o.MaxPercentage = 50 })
	plan := p.Plan(repair.Input{Now: t0.Add(time.Hour), Snapshot: c.s})
	if len(plan.Repairs) != 1 || !plan.Repairs[0].Replace {
		t.Fatalf("group at its minimum: %+v, want gpu-0 repaired with its replacement ordered first", plan.Repairs)
	}
	c = newCluster(t, 2, 0)
	c.condition("gpu-0", "AcceleratedHardwareReady", v1.ConditionFalse, t0)
	if plan := p.Plan(repair.Input{Now: t0.Add(time.Hour), Snapshot: c.s}); len(plan.Repairs) != 1 || plan.Repairs[0].Replace {
		t.Errorf("group above its minimum: %+v, want gpu-0 repaired, its pods left to scale-up", plan.Repairs)
	}
}

func TestParseCondition(t *testing.T) {
	c, err := repair.ParseCondition("AcceleratedHardwareReady=False:10m")
	if err != nil || c.Type != "AcceleratedHardwareReady" || c.Status != v1.ConditionFalse || c.After != 10*time.Minute {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	if back, err := repair.ParseCondition(c.String()); err != nil || back != c {
		t.Errorf("round trip of %q: %+v, %v", c.String(), back, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"AcceleratedHardwareReady", "want Type=Status:duration"},
		{"A=False", "duration: missing"},
		{"=False:1m", "type: empty"},
		{"A=Broken:1m", `status: want True, False or Unknown, got "Broken"`},
		{"A=False:soon", `duration: "soon" is not a duration`},
		{"A=False:-1m", "must not be negative"},
	} {
		if _, err := repair.ParseCondition(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseCondition(%q) = %v, want an error naming it and %q", tc.in, err, tc.want)
		}
	}
}

func TestOptionsValidateNamesEveryBadFlag(t *testing.T) {
	o := repair.DefaultOptions()
	o.MaxPercentage, o.OkUnhealthyCount, o.MaxUnhealthyPercentage, o.MissingGPUsAfter = 0, -1, 120, -time.Second
	o.Conditions = append(o.Conditions, o.Conditions[0])
	err := o.Validate()
	for _, flag := range []string{"--repair-max-percentage", "--repair-ok-unhealthy-count", "--repair-max-unhealthy-percentage",
		"--repair-missing-gpus-after", "--repair-condition[3]"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("Validate() = %v, want it to name %s", err, flag)
		}
	}
}
