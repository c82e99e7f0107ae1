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

// stockoutCloud answers like a cloud out of one group's capacity: every
// node asked of a stocked-out group fails, and the failure becomes visible
// to the loop that follows the request, as a scaling activity or an
// instance error is read at the next refresh.
type stockoutCloud struct {
	out   map[string]bool
	asked []autoscaler.ScaleUp
}

// outcomes are what the shell hands the loop at now for the last plan.
func (c *stockoutCloud) outcomes(now time.Time) []autoscaler.Outcome {
	var out []autoscaler.Outcome
	for _, su := range c.asked {
		out = append(out, autoscaler.ScaleUpResult{Group: su.Group, Delta: su.Delta, At: now})
		if c.out[su.Group] {
			out = append(out, autoscaler.CreationFailed{Group: su.Group, Count: su.Delta, Class: autoscaler.ErrorOutOfResources,
				Code: "InsufficientInstanceCapacity", Message: "no p5.48xlarge capacity in us-east-1a", At: now})
		}
	}
	return out
}

// run steps the loop every interval from t0 until end, applying its plans
// to the snapshot's targets, and returns, per group, when each scale-up of
// it was planned, and when failures were handed in.
func (c *stockoutCloud) run(t *testing.T, a *autoscaler.Autoscaler, s *snapshot.Snapshot, pending []*v1.Pod,
	interval, end time.Duration) (ups, failures map[string][]time.Duration) {
	ups, failures = map[string][]time.Duration{}, map[string][]time.Duration{}
	var held []autoscaler.Outcome
	for at := time.Duration(0); at <= end; at += interval {
		now := t0.Add(at)
		in := append(held, c.outcomes(now)...)
		for _, o := range in {
			if f, ok := o.(autoscaler.CreationFailed); ok {
				failures[f.Group] = append(failures[f.Group], at)
			}
		}
		plan := step(t, a, autoscaler.Input{Now: now, Snapshot: s, Pending: pending, Outcomes: in})
		held, c.asked = nil, nil
		for _, act := range plan.Actions {
			switch act := act.(type) {
			case autoscaler.ScaleUp:
				ups[act.Group] = append(ups[act.Group], at)
				c.asked = append(c.asked, act)
				setTarget(t, s, act.Group, s.NodeGroup(act.Group).TargetSize+act.Delta)
			case autoscaler.DecreaseTarget:
				setTarget(t, s, act.Group, s.NodeGroup(act.Group).TargetSize-act.Delta)
			}
		}
	}
	return ups, failures
}

// From the cloud's "no" to the next expander choice: the loop that first
// sees the failure scales the next group up. A group that keeps failing is
// not asked again until its backoff has ended (5 minutes, then 10), and is
// asked again in the first loop after.
func TestStockoutFallsBackInTheLoopThatSeesIt(t *testing.T) {
	a, s, pending := twoGroups(t)
	const interval = 10 * time.Second
	cloud := &stockoutCloud{out: map[string]bool{"a-cheap": true, "b-dear": true}}
	ups, failures := cloud.run(t, a, s, pending, interval, 20*time.Minute)
	t.Logf("asked a-cheap at %v, b-dear at %v; failures seen a-cheap %v, b-dear %v", ups["a-cheap"], ups["b-dear"], failures["a-cheap"], failures["b-dear"])
	if len(failures["a-cheap"]) == 0 || len(ups["b-dear"]) == 0 {
		t.Fatalf("want a-cheap's failure and the fallback to b-dear")
	}
	if took := ups["b-dear"][0] - failures["a-cheap"][0]; took != 0 {
		t.Errorf("the fallback came %s after the failure was visible, want the same loop", took)
	}
	for _, g := range []string{"a-cheap", "b-dear"} {
		if len(ups[g]) < 3 {
			t.Fatalf("%s asked at %v: want it tried again after each backoff", g, ups[g])
		}
		for i, at := range ups[g][1:] {
			wait := 5 * time.Minute << i
			if since := at - failures[g][i]; since < wait || since >= wait+interval {
				t.Errorf("%s asked again %s after its failure %d: want the first loop after its %s backoff", g, since, i+1, wait)
			}
		}
	}
}

// gpuGroup is a group of one instance type in one zone.
func gpuGroup(id, instanceType, zone string, price float64, spot bool) snapshot.NodeGroup {
	tmpl := gpuTemplate()
	tmpl.Labels[v1.LabelInstanceTypeStable] = instanceType
	if zone != "" {
		tmpl.Labels[v1.LabelTopologyZone] = zone
	}
	b := builder.NodeGroup(id).Max(5).Price(price).InstanceType(instanceType).Template(tmpl)
	if spot {
		b = b.Spot()
	}
	return b.Build()
}

// An out-of-capacity answer is about the instance type in the zone: every
// group that launches it there is backed off with the failed one, and the
// next choice is one that can still get capacity.
func TestStockoutBacksOffTheOfferingInItsZone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// zone the cloud names; the failed group's own when "".
		zone, failedGroupZone string
	}{
		{name: "zone of the group", failedGroupZone: "us-east-1a"},
		{name: "zone the cloud names, for a group across zones", zone: "us-east-1a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
			s := snapshot.New()
			for _, g := range []snapshot.NodeGroup{
				gpuGroup("a-spot", "p5.48xlarge", tc.failedGroupZone, 1, true),
				gpuGroup("b-spot-same", "p5.48xlarge", "us-east-1a", 2, true),
				gpuGroup("c-on-demand-same", "p5.48xlarge", "us-east-1a", 3, false),
				gpuGroup("d-spot-other-zone", "p5.48xlarge", "us-east-1b", 4, true),
			} {
				if err := s.SetNodeGroup(g); err != nil {
					t.Fatal(err)
				}
			}
			pending := []*v1.Pod{owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())}
			plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
			if got := summary(plan); got != "scale-up a-spot+1" {
				t.Fatalf("first choice %q, want a-spot", got)
			}
			setTarget(t, s, "a-spot", 1)
			failed := append(accepted(plan, t0), autoscaler.CreationFailed{Group: "a-spot", Count: 1, Class: autoscaler.ErrorOutOfResources,
				Code: "InsufficientInstanceCapacity", Message: "no capacity", Zone: tc.zone, At: t0.Add(10 * time.Second)})
			plan = step(t, a, autoscaler.Input{Now: t0.Add(10 * time.Second), Snapshot: s, Pending: pending, Outcomes: failed})
			if got := summary(plan); got != "decrease a-spot-1; scale-up c-on-demand-same+1" {
				t.Fatalf("after the stockout %q, want the same offering skipped and on-demand chosen", got)
			}
			same := groupStatus(plan, "b-spot-same").ScaleUp
			if same.State != status.ActivityBackoff || !strings.Contains(same.Message, "a-spot") || !strings.Contains(same.Message, "InsufficientInstanceCapacity") {
				t.Errorf("b-spot-same status %+v: want backed off naming a-spot and the cloud's reason", same)
			}
			if until := groupStatus(plan, "a-spot").ScaleUp.Until; !same.Until.Equal(until) {
				t.Errorf("b-spot-same backed off until %v, a-spot until %v: want the same end", same.Until, until)
			}
			if other := groupStatus(plan, "d-spot-other-zone").ScaleUp; other.State == status.ActivityBackoff {
				t.Errorf("the other zone's group was backed off: %+v", other)
			}
		})
	}
}

// A group backed off for a stockout elsewhere keeps its own scale-up in
// flight, and its own first failure afterwards starts its backoff at the
// initial step.
func TestOfferingBackoffKeepsTheSiblingsRequest(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	s := snapshot.New()
	for _, g := range []snapshot.NodeGroup{
		gpuGroup("a", "g6.xlarge", "z1", 1, false), gpuGroup("b", "g6.xlarge", "z1", 2, false),
	} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	setTarget(t, s, "b", 1) // b's node is on its way
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Outcomes: []autoscaler.Outcome{
		autoscaler.ScaleUpResult{Group: "b", Delta: 1, At: t0},
		autoscaler.CreationFailed{Group: "a", Count: 0, Class: autoscaler.ErrorOutOfResources, Code: "ZONE_RESOURCE_POOL_EXHAUSTED", At: t0}}})
	if g := groupStatus(plan, "b"); g.ScaleUp.State != status.ActivityBackoff || g.Upcoming != 1 {
		t.Fatalf("b %+v: want backed off with its node still upcoming", g)
	}
	later := t0.Add(6 * time.Minute)
	plan = step(t, a, autoscaler.Input{Now: later, Snapshot: s, Outcomes: []autoscaler.Outcome{
		autoscaler.CreationFailed{Group: "b", Count: 1, Class: autoscaler.ErrorOutOfResources, Code: "ZONE_RESOURCE_POOL_EXHAUSTED", At: later}}})
	if until := groupStatus(plan, "b").ScaleUp.Until; !until.Equal(later.Add(5 * time.Minute)) {
		t.Errorf("b's own failure backed it off until %v, want the initial 5m step from %v", until, later)
	}
}
