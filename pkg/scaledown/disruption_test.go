package scaledown_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// A 500m pod annotated do-not-disrupt (gpuscale's key and Karpenter's) on
// an idle 4-cpu node, default options: scale-down never evicts it, however
// long the node stays unneeded, and says which pod and rule keep it.
func TestDoNotDisruptPodKeepsItsNode(t *testing.T) {
	for _, key := range []string{drain.AnnotationDoNotDisrupt, drain.AnnotationKarpenterDoNotDisrupt} {
		t.Run(key, func(t *testing.T) {
			c := newCluster(t).group("pool", 0, 2)
			trainer := rs("trainer", "500m")
			trainer.Annotations = map[string]string{key: "true"}
			c.node(node4("idle").Build(), "pool", trainer).
				node(node4("busy").CPU("16").Build(), "pool", rs("big", "12"))
			planner := newPlanner(t, scaledown.DefaultOptions())
			for _, at := range []time.Duration{0, 11 * time.Minute, time.Hour} {
				p := planner.Plan(c.input(t0.Add(at)))
				if len(p.Delete) != 0 {
					t.Fatalf("at +%s removed %v: the pod is annotated %s=true", at, deleted(p), key)
				}
				k := kept(t, p, "idle")
				if k.Reason != scaledown.ReasonBlockedByPod || k.PodCode != drain.CodeDoNotDisrupt || k.Pod.Name != "trainer" {
					t.Fatalf("at +%s idle kept for %s/%s (%s), want %s by pod trainer, %s", at, k.Reason, k.PodCode, k.Message,
						scaledown.ReasonBlockedByPod, drain.CodeDoNotDisrupt)
				}
			}
		})
	}
}

// A node annotated do-not-disrupt stays, empty or not.
func TestDoNotDisruptNodeStays(t *testing.T) {
	c := newCluster(t).group("pool", 0, 2)
	c.node(annotateNode(node4("held").Build(), drain.AnnotationKarpenterDoNotDisrupt, "true"), "pool").
		node(node4("free").Build(), "pool")
	p := planOnce(t, c, immediate(), nil)
	if got := deleted(p); len(got) != 1 || got[0] != "free" {
		t.Fatalf("removed %v, want only free; kept:%s", got, keptSummary(p))
	}
	if k := kept(t, p, "held"); k.Reason != scaledown.ReasonDoNotDisrupt || !strings.Contains(k.Message, drain.AnnotationKarpenterDoNotDisrupt) {
		t.Errorf("held kept for %s: %s", k.Reason, k.Message)
	}
}

func budget(t *testing.T, spec string) disruption.Budget {
	t.Helper()
	b, err := disruption.ParseBudget(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// emptyPool is four empty nodes in one group.
func emptyPool(t *testing.T) *cluster {
	c := newCluster(t).group("pool", 0, 4)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		c.node(node4(n).Build(), "pool")
	}
	return c
}

// A disruption budget bounds scale-down per group, removals in flight
// counted; without one, only the parallelism flags do (upstream).
func TestDisruptionBudgetBoundsScaleDown(t *testing.T) {
	p := planOnce(t, emptyPool(t), immediate(), nil)
	if len(p.Delete) != 4 {
		t.Fatalf("no budget: removed %v, want all four", deleted(p))
	}
	opts := immediate()
	opts.Disruption.Budgets = []disruption.Budget{budget(t, "nodes=50%;groups=po.*")}
	p = planOnce(t, emptyPool(t), opts, nil)
	if len(p.Delete) != 2 {
		t.Fatalf("budget 50%% of 4: removed %v, want 2; kept:%s", deleted(p), keptSummary(p))
	}
	u := unneeded(t, p, "n4")
	if u.Reason != scaledown.ReasonDisruptionBudget {
		t.Errorf("n4 waits for %s, want %s", u.Reason, scaledown.ReasonDisruptionBudget)
	}
	if k := kept(t, p, "n4"); !strings.Contains(k.Message, "nodes=50%") {
		t.Errorf("n4 kept: %s; want the budget named", k.Message)
	}
	p = planOnce(t, emptyPool(t), opts, func(in *scaledown.Input) {
		in.Deleting = []scaledown.Deletion{{Node: "elsewhere", Group: "pool"}}
	})
	if len(p.Delete) != 1 {
		t.Errorf("budget of 2 with one removal in flight: removed %v, want 1", deleted(p))
	}
	other := immediate()
	other.Disruption.Budgets = []disruption.Budget{budget(t, "nodes=0;groups=gpu-.*")}
	if p = planOnce(t, emptyPool(t), other, nil); len(p.Delete) != 4 {
		t.Errorf("a budget of other groups: removed %v, want all four", deleted(p))
	}
}

// Outside its maintenance windows a group loses no node, but its unneeded
// nodes keep their clocks and go once a window opens.
func TestDisruptionWindowHoldsScaleDown(t *testing.T) {
	w, err := disruption.ParseWindow("groups=pool;schedule=0 22 * * *;duration=2h")
	if err != nil {
		t.Fatal(err)
	}
	opts := scaledown.DefaultOptions()
	opts.Disruption.Windows = []disruption.Window{w}
	c := emptyPool(t)
	planner := newPlanner(t, opts)
	// t0 is 12:00 UTC: the window is shut.
	p := planner.Plan(c.input(t0))
	p = planner.Plan(c.input(t0.Add(time.Hour)))
	if len(p.Delete) != 0 {
		t.Fatalf("outside the window removed %v", deleted(p))
	}
	u := unneeded(t, p, "n1")
	if u.Reason != scaledown.ReasonOutsideWindow || !u.Since.Equal(t0) {
		t.Errorf("n1 waits for %s since %s, want %s since %s", u.Reason, u.Since, scaledown.ReasonOutsideWindow, t0)
	}
	if k := kept(t, p, "n1"); !strings.Contains(k.Message, "schedule=0 22 * * *") {
		t.Errorf("n1 kept: %s; want the window named", k.Message)
	}
	p = planner.Plan(c.input(t0.Add(10*time.Hour + time.Minute)))
	if len(p.Delete) != 4 {
		t.Errorf("inside the window removed %v, want all four; kept:%s", deleted(p), keptSummary(p))
	}
}

// With the default --max-drain-parallelism=1, a node given the drain slot
// and then found to depend on a waiting node frees the slot in the same
// loop: the next node that can go alone goes, loop after loop no node
// takes the slot and gives it up.
func TestFreedDrainSlotGoesToTheNextNode(t *testing.T) {
	c := partnerCluster(t).group("fast", 0, 2)
	c.node(node4("e").Label(v1.LabelHostname, "e").Build(), "fast", rs("e-pod", "1500m"))
	planner := newPlanner(t, immediate())
	for loop := range 2 {
		p := planner.Plan(c.input(t0.Add(time.Duration(loop) * time.Minute)))
		if got := deleted(p); len(got) != 1 || got[0] != "e" {
			t.Fatalf("loop %d removed %v, want e (a depends on b, which waits); kept:%s", loop, got, keptSummary(p))
		}
		if u := unneeded(t, p, "a"); u.Reason != scaledown.ReasonDependsOnWaitingNodes {
			t.Errorf("loop %d: a waits for %s, want %s", loop, u.Reason, scaledown.ReasonDependsOnWaitingNodes)
		}
	}
}

// A removal carried out now keeps the destinations its own simulation
// found, even when a node simulated after it, which waits, moved its pods
// on: "a" evicts p towards its required partner on w; w's simulation moved
// partner and p on to d, but w waits, so the partner stays on w.
func TestDestinationsHoldWhenALaterNodeWaits(t *testing.T) {
	c := slowAndFast(t)
	p := controlledBy(builder.Pod("p").CPU("500m").Label("app", "p").Affinity(v1.LabelHostname, "app", "partner").Build(), "ReplicaSet", "p")
	partner := controlledBy(builder.Pod("partner").CPU("1").Label("app", "partner").Build(), "ReplicaSet", "partner")
	c.node(node4("a").Label(v1.LabelHostname, "a").Build(), "fast", p).
		node(node4("w").Label(v1.LabelHostname, "w").Build(), "slow", partner).
		node(node4("d").CPU("16").Label(v1.LabelHostname, "d").Build(), "", rs("filler", "14"))
	plan := planOnce(t, c, immediate(), nil)
	if got := evictions(removal(t, plan, "a")); len(got) != 1 || got[0] != "p->w" {
		t.Errorf("a evicts %v, want p->w: w waits, so its partner stays there", got)
	}
	if u := unneeded(t, plan, "w"); u.Reason != scaledown.ReasonNotUnneededLongEnough {
		t.Errorf("w waits for %s", u.Reason)
	}
	// Once w goes too, p follows the partner to d.
	opts := immediate()
	opts.MaxDrainParallelism = 0
	planner := newPlanner(t, opts)
	planner.Plan(c.input(t0))
	plan = planner.Plan(c.input(t0.Add(time.Hour)))
	if got := evictions(removal(t, plan, "a")); len(got) != 1 || got[0] != "p->d" {
		t.Errorf("with w removed too, a evicts %v, want p->d beside the partner", got)
	}
}
