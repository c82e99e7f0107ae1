package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestBudgetsConsumeAcrossNodes(t *testing.T) {
	web := map[string]string{"app": "web"}
	c := ctx(pdb("default", "web", 2, web))
	rule := drain.RulePodDisruptionBudget{}
	// A first node with one covered pod takes one of the two disruptions.
	if v := rule.Check(c, podOf("a")); v.Outcome != drain.Undecided {
		t.Fatalf("first pod: got %s, want it allowed", v.Outcome)
	}
	if c.Budgets.Consume(podOf("a")) {
		t.Fatal("taking 1 of 2 disruptions must not overdraw")
	}
	// A second node with two covered pods: each still sees one left, so the
	// node may go, but evicting both overdraws the budget.
	for _, name := range []string{"b", "c"} {
		if v := rule.Check(c, podOf(name)); v.Outcome != drain.Undecided {
			t.Fatalf("pod %s: got %s, want it allowed", name, v.Outcome)
		}
	}
	if c.Budgets.Consume(podOf("b")) {
		t.Fatal("taking the last disruption must not overdraw")
	}
	if !c.Budgets.Consume(podOf("c")) {
		t.Fatal("taking more than allowed must report an overdraw")
	}
	// A third node finds nothing left.
	if v := rule.Check(c, podOf("d")); v.Outcome != drain.Block || v.Code != drain.CodeNotEnoughPDB {
		t.Fatalf("after the allowance is spent: got %s/%s, want Block/%s", v.Outcome, v.Code, drain.CodeNotEnoughPDB)
	}
	if got := c.Budgets.Consumed(); got != 3 {
		t.Errorf("Consumed() = %d, want 3", got)
	}
}

func TestBudgetsIgnoreUncoveredPods(t *testing.T) {
	b := drain.NewBudgets(nil)
	if b.Len() != 0 || b.Covers(podOf("a")) || b.Blocking(podOf("a")) != nil || b.Consume(podOf("a")) {
		t.Fatal("an empty tracker covers nothing")
	}
	var none *drain.Budgets
	if none.Len() != 0 || none.Covers(podOf("a")) || none.Blocking(podOf("a")) != nil || none.Consume(podOf("a")) || none.Consumed() != 0 {
		t.Fatal("a nil tracker covers nothing")
	}
	c := ctx(pdb("default", "db", 1, map[string]string{"app": "db"}))
	if c.Budgets.Consume(podOf("web")) || c.Budgets.Consumed() != 0 {
		t.Fatal("consuming a pod no budget covers must change nothing")
	}
}

func TestBudgetsReportFirstByName(t *testing.T) {
	web := map[string]string{"app": "web"}
	c := ctx(pdb("default", "zeta", 0, web), pdb("default", "alpha", 0, web))
	if got := c.Budgets.Blocking(podOf("w")); got == nil || got.Name != "alpha" {
		t.Fatalf("Blocking should name budgets in name order, got %+v", got)
	}
}
