package drain_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Upstream's oncompletion rule: safe-to-evict "on-completion" waits.
func TestRuleOnCompletion(t *testing.T) {
	runRuleCases(t, drain.RuleOnCompletion{}, []ruleCase{
		{name: "on-completion waits", pod: podOf("train", annotated(drain.AnnotationSafeToEvict, "on-completion")),
			want: drain.Wait, code: drain.CodeOnCompletion},
		{name: "true is for other rules", pod: podOf("a", annotated(drain.AnnotationSafeToEvict, "true")), want: drain.Undecided},
		{name: "false is for other rules", pod: podOf("b", annotated(drain.AnnotationSafeToEvict, "false")), want: drain.Undecided},
		{name: "no annotation", pod: podOf("c"), want: drain.Undecided},
	})
	rules := drain.Default(drain.DefaultOptions())
	done := podOf("train", annotated(drain.AnnotationSafeToEvict, "on-completion"), func(p *v1.Pod) {
		p.Status.Phase = v1.PodSucceeded
		p.Spec.RestartPolicy = v1.RestartPolicyNever
	})
	if v := rules.Evaluate(ctx(), done); v.Outcome != drain.Skip || v.Code != drain.CodeTerminalPod {
		t.Errorf("a completed on-completion pod: %s/%s, want it skipped as terminal", v.Outcome, v.Code)
	}
	bare := podOf("train", annotated(drain.AnnotationSafeToEvict, "on-completion"), func(p *v1.Pod) { p.OwnerReferences = nil })
	if v := rules.Evaluate(ctx(), bare); v.Outcome != drain.Wait {
		t.Errorf("an on-completion pod without a controller: %s/%s, want Wait (it need not be recreated)", v.Outcome, v.Code)
	}
}
