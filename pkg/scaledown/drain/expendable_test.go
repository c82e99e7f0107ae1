package drain_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func priority(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

func TestRuleExpendablePod(t *testing.T) {
	r := drain.RuleExpendablePod{Cutoff: -10}
	runRuleCases(t, r, []ruleCase{
		{name: "priority below the cutoff is skipped", pod: podOf("placeholder", priority(-11)),
			want: drain.Skip, code: drain.CodeExpendablePod},
		{name: "priority equal to the cutoff is not expendable", pod: podOf("edge", priority(-10)), want: drain.Undecided},
		{name: "positive priority is not expendable", pod: podOf("web", priority(1000)), want: drain.Undecided},
		{name: "pod without priority is never expendable", pod: podOf("web"), want: drain.Undecided},
	})
	runRuleCases(t, drain.RuleExpendablePod{Cutoff: 0}, []ruleCase{
		{name: "cutoff is configurable", pod: podOf("low", priority(-1)), want: drain.Skip, code: drain.CodeExpendablePod},
	})
}
