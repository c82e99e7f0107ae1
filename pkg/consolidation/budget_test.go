package consolidation_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

// quarterUsed is four 8-GPU nodes with two 1-GPU pods each: three can go.
func quarterUsed(t *testing.T) *cluster {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		c.node(n, "a100x8", gpuPod(n+"-0", 1), gpuPod(n+"-1", 1))
	}
	return c
}

func TestBudgetLimitsABatch(t *testing.T) {
	p := plan(t, quarterUsed(t), immediate(), nil)
	if len(p.Moves) != 3 {
		t.Fatalf("without a budget, want 3 deletions:%s", summary(p))
	}
	o := immediate()
	b, err := disruption.ParseBudget("nodes=1;groups=a100x.*")
	if err != nil {
		t.Fatal(err)
	}
	o.Budgets = []disruption.Budget{b}
	p = plan(t, quarterUsed(t), o, nil)
	if len(p.Moves) != 1 {
		t.Fatalf("budget of 1 node, want 1 deletion:%s", summary(p))
	}
	budgeted := 0
	for _, k := range p.Kept {
		if k.Reason == consolidation.ReasonBudget {
			budgeted++
		}
	}
	if budgeted == 0 {
		t.Errorf("no node kept for the budget:%s", summary(p))
	}
	// A removal in flight uses the budget up.
	p = plan(t, quarterUsed(t), o, func(in *consolidation.Input) {
		in.Deleting = []scaledown.Deletion{{Node: "n4", Group: "a100x8", Drain: true}}
	})
	if len(p.Moves) != 0 {
		t.Fatalf("budget used by a removal in flight, want no move:%s", summary(p))
	}
	if k := kept(t, p, "n1"); k.Reason != consolidation.ReasonBudget {
		t.Errorf("n1 kept for %s, want %s", k.Reason, consolidation.ReasonBudget)
	}
	// A percentage rounds up: 10% of 4 nodes is 1.
	b10, _ := disruption.ParseBudget("nodes=10%")
	o.Budgets = []disruption.Budget{b10}
	if p := plan(t, quarterUsed(t), o, nil); len(p.Moves) != 1 {
		t.Fatalf("10%% of 4 nodes, want 1 deletion:%s", summary(p))
	}
}

func TestWindows(t *testing.T) {
	night, err := disruption.ParseWindow("schedule=0 22 * * *;duration=6h")
	if err != nil {
		t.Fatal(err)
	}
	o := immediate()
	o.Windows = []disruption.Window{night}
	p := plan(t, halfUsed(t, nil), o, nil) // t0 is noon
	if len(p.Moves) != 0 {
		t.Fatalf("a move outside the window:%s", summary(p))
	}
	if k := kept(t, p, "gpu-a"); k.Reason != consolidation.ReasonOutsideWindow {
		t.Errorf("gpu-a kept for %s, want %s", k.Reason, consolidation.ReasonOutsideWindow)
	}
	for _, at := range []time.Duration{10 * time.Hour, 15*time.Hour + 59*time.Minute} {
		p = plan(t, halfUsed(t, nil), o, func(in *consolidation.Input) { in.Now = t0.Add(at) })
		if len(p.Moves) != 1 {
			t.Errorf("at %s, inside the window, want a move:%s", t0.Add(at).Format("15:04"), summary(p))
		}
	}
	if p = plan(t, halfUsed(t, nil), o, func(in *consolidation.Input) { in.Now = t0.Add(16 * time.Hour) }); len(p.Moves) != 0 {
		t.Errorf("at 04:00, when the window has closed, want no move:%s", summary(p))
	}
	// A window of another group does not hold this one back.
	other, _ := disruption.ParseWindow("groups=cpu-.*;schedule=0 22 * * *;duration=6h")
	o.Windows = []disruption.Window{other}
	if p := plan(t, halfUsed(t, nil), o, nil); len(p.Moves) != 1 {
		t.Errorf("a window of other groups held a100x8 back:%s", summary(p))
	}
}

// TestScheduledBudget is Karpenter's pattern: no disruption during
// business hours (a budget of 0 with a schedule), up to 10% otherwise.
func TestScheduledBudget(t *testing.T) {
	o := immediate()
	for _, spec := range []string{"nodes=0;schedule=0 9 * * 1-5;duration=8h", "nodes=10%"} {
		b, err := disruption.ParseBudget(spec)
		if err != nil {
			t.Fatal(err)
		}
		o.Budgets = append(o.Budgets, b)
	}
	if p := plan(t, halfUsed(t, nil), o, nil); len(p.Moves) != 0 {
		t.Fatalf("a move at noon on a Wednesday:%s", summary(p))
	}
	if p := plan(t, halfUsed(t, nil), o, func(in *consolidation.Input) { in.Now = t0.Add(6 * time.Hour) }); len(p.Moves) != 1 {
		t.Fatalf("at 18:00, want a move:%s", summary(p))
	}
}
