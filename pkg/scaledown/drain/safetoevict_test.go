package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleSafeToEvict(t *testing.T) {
	runRuleCases(t, drain.RuleSafeToEvict{}, []ruleCase{
		{name: "annotation false blocks", pod: podOf("trainer", annotated(drain.AnnotationSafeToEvict, "false")),
			want: drain.Block, code: drain.CodeNotSafeToEvict, inMessage: []string{drain.AnnotationSafeToEvict + "=false"}},
		{name: "annotation true leaves the pod to later rules", pod: podOf("web", annotated(drain.AnnotationSafeToEvict, "true")),
			want: drain.Undecided},
		{name: "other values have no effect", pod: podOf("web", annotated(drain.AnnotationSafeToEvict, "no")), want: drain.Undecided},
		{name: "no annotation has no effect", pod: podOf("web"), want: drain.Undecided},
	})
}

func TestSafeToEvict(t *testing.T) {
	if !drain.SafeToEvict(podOf("a", annotated(drain.AnnotationSafeToEvict, "true"))) {
		t.Error(`"true" should read as safe to evict`)
	}
	if drain.SafeToEvict(podOf("b", annotated(drain.AnnotationSafeToEvict, "false"))) || drain.SafeToEvict(podOf("c")) {
		t.Error(`only "true" reads as safe to evict`)
	}
}
