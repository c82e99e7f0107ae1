package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// twoGroups is a cluster with a cheap and a dear GPU group and a pending
// GPU pod; the price expander picks the cheap one first.
func twoGroups(t *testing.T) (*autoscaler.Autoscaler, *snapshot.Snapshot, []*v1.Pod) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	s := snapshot.New()
	for _, g := range []struct {
		id    string
		price float64
	}{{"a-cheap", 1}, {"b-dear", 5}} {
		if err := s.SetNodeGroup(builder.NodeGroup(g.id).Max(5).Price(g.price).Template(gpuTemplate()).Build()); err != nil {
			t.Fatal(err)
		}
	}
	return a, s, []*v1.Pod{owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())}
}

// A scale-up the cloud refused backs the group off: the next loop turns to
// the next choice.
func TestRefusedScaleUpBacksTheGroupOff(t *testing.T) {
	a, s, pending := twoGroups(t)
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
	if got := summary(plan); got != "scale-up a-cheap+1" {
		t.Fatalf("first choice %q, want a-cheap", got)
	}
	refused := []autoscaler.Outcome{autoscaler.ScaleUpResult{Group: "a-cheap", Delta: 1, At: t0, Error: "AccessDenied"}}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Second), Snapshot: s, Pending: pending, Outcomes: refused})
	if got := summary(plan); got != "scale-up b-dear+1" {
		t.Fatalf("after the refusal %q, want b-dear", got)
	}
	if g := groupStatus(plan, "a-cheap"); g.ScaleUp.State != status.ActivityBackoff || g.ScaleUp.Message != "AccessDenied" {
		t.Errorf("a-cheap status %+v, want backed off with the cloud's message", g.ScaleUp)
	}
}

// Nodes the cloud will not create: the group is backed off, its target
// given back, and the same loop takes the next choice.
func TestFailedCreationsFallBackInTheSameLoop(t *testing.T) {
	a, s, pending := twoGroups(t)
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
	setTarget(t, s, "a-cheap", 1)
	failed := append(accepted(plan, t0), autoscaler.CreationFailed{Group: "a-cheap", Count: 1, Class: "OutOfResources",
		Code: "ZONE_RESOURCE_POOL_EXHAUSTED", At: t0.Add(time.Minute)})
	plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, Pending: pending, Outcomes: failed})
	if got := summary(plan); got != "decrease a-cheap-1; scale-up b-dear+1" {
		t.Fatalf("actions %q, want the failed node given back and b-dear", got)
	}
}

// After a restart the autoscaler has no record of the scale-up in flight:
// the group's target above its nodes is reconstructed as one, counts as
// upcoming (no duplicate node), and times out like any other, so a group
// whose node never comes does not stop scaling up for ever.
func TestScaleUpInFlightSurvivesARestart(t *testing.T) {
	_, s, pending := twoGroups(t)
	setTarget(t, s, "a-cheap", 1) // asked for before the restart
	restarted := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	plan := step(t, restarted, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
	if got := summary(plan); got != "" {
		t.Fatalf("right after the restart %q: the node asked for before counts as upcoming", got)
	}
	if g := groupStatus(plan, "a-cheap"); g.ScaleUp.State != status.ActivityInProgress || g.Upcoming != 1 {
		t.Fatalf("a-cheap status %+v, want a scale-up in progress with one upcoming node", g)
	}
	plan = step(t, restarted, autoscaler.Input{Now: t0.Add(14 * time.Minute), Snapshot: s, Pending: pending})
	if got := summary(plan); got != "" {
		t.Fatalf("before the provision time %q", got)
	}
	if want := t0.Add(15 * time.Minute); !plan.NextDecisionAt.Equal(want) {
		t.Errorf("next decision %v, want the provisioning timeout %v", plan.NextDecisionAt, want)
	}
	plan = step(t, restarted, autoscaler.Input{Now: t0.Add(15 * time.Minute), Snapshot: s, Pending: pending})
	if got := summary(plan); got != "decrease a-cheap-1; scale-up b-dear+1" {
		t.Fatalf("at the provision time %q, want the missing node given back and the next group", got)
	}
}

// An instance that boots but never joins (a broken GPU driver or AMI) is
// deleted once --unregistered-node-removal-time has passed, and no longer
// counts as upcoming.
func TestInstanceThatNeverJoinsIsDeleted(t *testing.T) {
	a, s, pending := twoGroups(t)
	g := *s.NodeGroup("a-cheap")
	g.TargetSize, g.InstancesListed = 2, true
	g.Instances = []snapshot.Instance{
		{ProviderID: "test://ok", CreatedAt: t0.Add(-time.Minute)},
		{ProviderID: "test://broken", CreatedAt: t0.Add(-time.Minute)},
	}
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNodeInGroup(node("ok", t0), "a-cheap"); err != nil {
		t.Fatal(err)
	}
	plan := step(t, a, autoscaler.Input{Now: t0.Add(13 * time.Minute), Snapshot: s, Pending: pending})
	if got := only(plan, "scale-up") + only(plan, "delete-instances"); got != "" {
		t.Fatalf("before the removal time %q", got)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(14 * time.Minute), Snapshot: s, Pending: pending})
	if got := only(plan, "delete-instances"); got != "delete-instances a-cheap:test://broken" {
		t.Fatalf("actions %q, want the instance that never joined deleted", summary(plan))
	}
	if c := groupStatus(plan, "a-cheap").Nodes; c.LongUnregistered != 1 {
		t.Errorf("node counts %+v, want one long-unregistered", c)
	}
}

// An instance that never joined still counts toward --max-nodes-total in
// the loop that deletes it: the deletion may fail, or be called off when
// the instance did register and a lagging cache hides it, and a scale-up
// of the same loop would then take the cluster past its limit.
func TestUnregisteredInstanceCountsTowardTheLimitsUntilGone(t *testing.T) {
	_, s, pending := twoGroups(t)
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price"; o.Limits.MaxNodesTotal = 2 })
	// The node that registered takes one GPU pod; the other needs a node.
	pending = append(pending, owned(builder.Pod("train-2").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()))
	g := *s.NodeGroup("a-cheap")
	g.TargetSize, g.InstancesListed = 2, true
	g.Instances = []snapshot.Instance{
		{ProviderID: "test://ok", CreatedAt: t0.Add(-time.Minute)},
		{ProviderID: "test://broken", CreatedAt: t0.Add(-time.Minute)},
	}
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNodeInGroup(node("ok", t0), "a-cheap"); err != nil {
		t.Fatal(err)
	}
	plan := step(t, a, autoscaler.Input{Now: t0.Add(14 * time.Minute), Snapshot: s, Pending: pending})
	if got := summary(plan); got != "delete-instances a-cheap:test://broken" {
		t.Fatalf("actions %q, want the instance deleted and no scale-up while it counts", got)
	}
	// Once the cloud lists it as deleting (the target lowered), its room
	// is free again.
	g.TargetSize, g.Instances[1].State = 1, snapshot.InstanceDeleting
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(15 * time.Minute), Snapshot: s, Pending: pending})
	if got := only(plan, "scale-up"); got != "scale-up b-dear+1" {
		t.Fatalf("actions %q, want a scale-up once the instance is on its way out", summary(plan))
	}
}

// The health brake: more than 3 unready nodes that are also more than 45%
// of the cluster stop all scaling, and the status says why.
func TestHealthBrake(t *testing.T) {
	cases := []struct {
		name             string
		ready, unready   int
		wantSafe, scales bool
	}{
		{"3 unready of 4 is within the count", 1, 3, true, true},
		{"4 unready of 10 is within the percentage", 6, 4, true, true},
		{"5 unready of 10 is over both", 5, 5, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, s, pending := twoGroups(t)
			g := *s.NodeGroup("b-dear")
			g.TargetSize = tc.ready + tc.unready
			_ = s.SetNodeGroup(g)
			for i := 0; i < tc.ready+tc.unready; i++ {
				n := node("n"+itoa(i), t0.Add(-time.Hour))
				if i >= tc.ready {
					n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
				}
				if err := s.AddNodeInGroup(n, "b-dear"); err != nil {
					t.Fatal(err)
				}
			}
			plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
			h := plan.Status.Cluster.Health
			if h.Safe != tc.wantSafe || (only(plan, "scale-up") != "") != tc.scales {
				t.Fatalf("health %+v, actions %q", h, summary(plan))
			}
			if !tc.wantSafe {
				if h.Reason != autoscaler.HealthUnready || plan.Status.Cluster.ScaleDown.Skipped == "" ||
					len(plan.Status.Pending) != 1 || !strings.Contains(plan.Status.Pending[0].Reasons[0].Message, "unready") {
					t.Fatalf("status does not say why: %+v", plan.Status)
				}
			}
		})
	}
}

// A removal in flight is not ordered again, and its outcome starts the
// cooldown after a deletion.
func TestRemovalOutcomes(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleDown.DelayAfterDelete = 5 * time.Minute })
	s := snapshot.New()
	setGroup(t, s, "cpu", 3, builder.Node("t").CPU("4").Build())
	for _, name := range []string{"n1", "n2", "n3"} {
		_ = s.AddNodeInGroup(node(name, t0.Add(-time.Hour)), "cpu")
	}
	_ = s.AddPod(owned(builder.Pod("keep").CPU("3").OnNode("n1").Build()))
	var plan autoscaler.Plan
	for m := 0; m <= 10; m++ {
		plan = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s})
	}
	if got := only(plan, "remove"); got != "remove n2,n3" {
		t.Fatalf("at 10m %q, want the two empty nodes removed", got)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(11 * time.Minute), Snapshot: s})
	if got := only(plan, "remove"); got != "" {
		t.Fatalf("removals in flight ordered again: %q", got)
	}
	if c := plan.Status.Cluster.Nodes; c.BeingDeleted != 2 {
		t.Errorf("node counts %+v, want 2 being deleted", c)
	}
	_ = s.RemoveNode("n2")
	setTarget(t, s, "cpu", 2)
	plan = step(t, a, autoscaler.Input{Now: t0.Add(12 * time.Minute), Snapshot: s, Outcomes: []autoscaler.Outcome{
		autoscaler.RemovalDone{Node: "n2", Group: "cpu", At: t0.Add(12 * time.Minute)},
		autoscaler.RemovalAborted{Node: "n3", Group: "cpu", At: t0.Add(12 * time.Minute), Reason: "a pod was scheduled onto it"},
	}})
	if got := only(plan, "remove"); got != "" {
		t.Fatalf("removed during the cooldown after a deletion: %q", got)
	}
	if sd := plan.Status.Cluster.ScaleDown; !sd.CooldownUntil.Equal(t0.Add(17*time.Minute)) || sd.CooldownReason == "" {
		t.Errorf("scale-down status %+v, want a cooldown until 17m", sd)
	}
	// n3 is judged again from 12m: unneeded for 10 minutes, it goes at 22m.
	plan = step(t, a, autoscaler.Input{Now: t0.Add(17 * time.Minute), Snapshot: s})
	if got := only(plan, "remove"); got != "" || !plan.NextDecisionAt.Equal(t0.Add(22*time.Minute)) {
		t.Fatalf("at 17m %q, next decision %v; want nothing until 22m", got, plan.NextDecisionAt)
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(22 * time.Minute), Snapshot: s})
	if got := only(plan, "remove"); got != "remove n3" {
		t.Fatalf("at 22m %q, want the aborted node removed", got)
	}
}

func groupStatus(p autoscaler.Plan, id string) status.NodeGroup {
	for _, g := range p.Status.NodeGroups {
		if g.ID == id {
			return g
		}
	}
	return status.NodeGroup{}
}
