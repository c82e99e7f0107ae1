package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleDoNotDisrupt(t *testing.T) {
	runRuleCases(t, drain.RuleDoNotDisrupt{}, []ruleCase{
		{name: "gpuscale annotation blocks", pod: podOf("trainer", annotated(drain.AnnotationDoNotDisrupt, "true")),
			want: drain.Block, code: drain.CodeDoNotDisrupt, inMessage: []string{drain.AnnotationDoNotDisrupt + "=true"}},
		{name: "Karpenter's annotation blocks", pod: podOf("trainer", annotated(drain.AnnotationKarpenterDoNotDisrupt, "true")),
			want: drain.Block, code: drain.CodeDoNotDisrupt, inMessage: []string{drain.AnnotationKarpenterDoNotDisrupt}},
		{name: "other values have no effect", pod: podOf("web", annotated(drain.AnnotationDoNotDisrupt, "false")), want: drain.Undecided},
		{name: "no annotation has no effect", pod: podOf("web"), want: drain.Undecided},
	})
}

func TestConsolidationRules(t *testing.T) {
	rules := drain.Consolidation(drain.DefaultOptions())
	def := drain.Default(drain.DefaultOptions())
	if len(rules) != len(def)+1 {
		t.Fatalf("%d rules, want the %d default ones and do-not-disrupt", len(rules), len(def))
	}
	if rules[len(rules)-1].Name() != "PodDisruptionBudget" || rules[len(rules)-2].Name() != "DoNotDisrupt" {
		t.Errorf("last rules are %s, %s; want DoNotDisrupt then PodDisruptionBudget", rules[len(rules)-2].Name(), rules[len(rules)-1].Name())
	}
	c := &drain.Context{Now: now}
	if v := rules.Evaluate(c, podOf("trainer", annotated(drain.AnnotationDoNotDisrupt, "true"))); v.Outcome != drain.Block {
		t.Errorf("annotated pod: %v, want Block", v.Outcome)
	}
	if v := def.Evaluate(c, podOf("trainer", annotated(drain.AnnotationDoNotDisrupt, "true"))); v.Outcome != drain.Drain {
		t.Errorf("scale-down's default rules: %v, want Drain (they do not read do-not-disrupt)", v.Outcome)
	}
	ds := podOf("agent", controlledBy("DaemonSet", "agent"), annotated(drain.AnnotationDoNotDisrupt, "true"))
	if v := rules.Evaluate(c, ds); v.Outcome != drain.Skip {
		t.Errorf("annotated DaemonSet pod: %v, want Skip (it goes with its node)", v.Outcome)
	}
}
