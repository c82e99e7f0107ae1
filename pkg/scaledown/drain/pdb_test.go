package drain_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRulePodDisruptionBudget(t *testing.T) {
	web := map[string]string{"app": "web"}
	bad := pdb("default", "broken", 5, nil)
	bad.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	runRuleCases(t, drain.RulePodDisruptionBudget{}, []ruleCase{
		{name: "budget with zero disruptions allowed blocks", pod: podOf("web-1"), ctx: ctx(pdb("default", "web", 0, web)),
			want: drain.Block, code: drain.CodeNotEnoughPDB, inMessage: []string{"default/web", "no more disruptions"}},
		{name: "budget with a disruption left lets the pod go", pod: podOf("web-1"), ctx: ctx(pdb("default", "web", 1, web)),
			want: drain.Undecided},
		{name: "budget selecting other pods does not apply", pod: podOf("web-1"), ctx: ctx(pdb("default", "db", 0, map[string]string{"app": "db"})),
			want: drain.Undecided},
		{name: "budget of another namespace does not apply", pod: podOf("web-1"), ctx: ctx(pdb("team", "web", 0, web)),
			want: drain.Undecided},
		{name: "empty selector covers the whole namespace", pod: podOf("web-1"), ctx: ctx(pdb("default", "all", 0, map[string]string{})),
			want: drain.Block, code: drain.CodeNotEnoughPDB},
		{name: "missing selector covers nothing", pod: podOf("web-1"), ctx: ctx(pdb("default", "none", 0, nil)),
			want: drain.Undecided},
		{name: "any exhausted budget among several blocks", pod: podOf("web-1"),
			ctx: ctx(pdb("default", "a", 3, web), pdb("default", "b", 0, web)), want: drain.Block, code: drain.CodeNotEnoughPDB,
			inMessage: []string{"default/b"}},
		{name: "invalid selector blocks rather than guess", pod: podOf("web-1"), ctx: ctx(bad),
			want: drain.Block, code: drain.CodeInvalidPDB, inMessage: []string{"default/broken", "invalid selector"}},
		{name: "safe-to-evict true does not override a budget", pod: podOf("web-1", annotated(drain.AnnotationSafeToEvict, "true")),
			ctx: ctx(pdb("default", "web", 0, web)), want: drain.Block, code: drain.CodeNotEnoughPDB},
		{name: "no budgets at all lets the pod go", pod: podOf("web-1"), ctx: &drain.Context{Now: now}, want: drain.Undecided},
	})
}
