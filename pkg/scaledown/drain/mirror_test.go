package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleMirrorPod(t *testing.T) {
	runRuleCases(t, drain.RuleMirrorPod{}, []ruleCase{
		{name: "mirror pod is skipped", pod: podOf("etcd", annotated(drain.AnnotationMirrorPod, "abc")),
			want: drain.Skip, code: drain.CodeMirrorPod},
		{name: "mirror annotation with empty value still marks a mirror pod", pod: podOf("etcd", annotated(drain.AnnotationMirrorPod, "")),
			want: drain.Skip, code: drain.CodeMirrorPod},
		{name: "ordinary pod is left to later rules", pod: podOf("web"), want: drain.Undecided},
	})
}
