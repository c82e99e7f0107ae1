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

// Every voluntary disruption runs the default rules, and they honour
// do-not-disrupt: a pod annotated so blocks its node, whatever its
// safe-to-evict annotation says, while a pod that goes away with its node
// anyway is still skipped.
func TestDefaultRulesHonourDoNotDisrupt(t *testing.T) {
	rules := drain.Default(drain.DefaultOptions())
	if rules[len(rules)-1].Name() != "PodDisruptionBudget" || rules[len(rules)-2].Name() != "DoNotDisrupt" {
		t.Errorf("last rules are %s, %s; want DoNotDisrupt then PodDisruptionBudget", rules[len(rules)-2].Name(), rules[len(rules)-1].Name())
	}
	c := &drain.Context{Now: now}
	for _, key := range []string{drain.AnnotationDoNotDisrupt, drain.AnnotationKarpenterDoNotDisrupt} {
		if v := rules.Evaluate(c, podOf("trainer", annotated(key, "true"))); v.Outcome != drain.Block || v.Code != drain.CodeDoNotDisrupt {
			t.Errorf("pod annotated %s: %v %s, want Block %s", key, v.Outcome, v.Code, drain.CodeDoNotDisrupt)
		}
	}
	both := podOf("trainer", annotated(drain.AnnotationDoNotDisrupt, "true"), annotated(drain.AnnotationSafeToEvict, "true"))
	if v := rules.Evaluate(c, both); v.Outcome != drain.Block {
		t.Errorf("pod annotated do-not-disrupt and safe-to-evict=true: %v, want Block", v.Outcome)
	}
	ds := podOf("agent", controlledBy("DaemonSet", "agent"), annotated(drain.AnnotationDoNotDisrupt, "true"))
	if v := rules.Evaluate(c, ds); v.Outcome != drain.Skip {
		t.Errorf("annotated DaemonSet pod: %v, want Skip (it goes with its node)", v.Outcome)
	}
}
