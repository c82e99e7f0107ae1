package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleNoController(t *testing.T) {
	strict := drain.RuleNoController{}
	runRuleCases(t, strict, []ruleCase{
		{name: "ReplicaSet pod may move", pod: podOf("web"), want: drain.Undecided},
		{name: "Job pod may move", pod: podOf("batch", controlledBy("Job", "train")), want: drain.Undecided},
		{name: "StatefulSet pod may move", pod: podOf("db-0", controlledBy("StatefulSet", "db")), want: drain.Undecided},
		{name: "ReplicationController pod may move", pod: podOf("old", controlledBy("ReplicationController", "rc")), want: drain.Undecided},
		{name: "pod without owner blocks", pod: podOf("bare", func(p *podT) { p.OwnerReferences = nil }),
			want: drain.Block, code: drain.CodeNotReplicated, inMessage: []string{"no controller"}},
		{name: "owner that is not a controller blocks", pod: podOf("orphan", ownedNotControlled),
			want: drain.Block, code: drain.CodeNotReplicated},
		{name: "custom controller blocks by default", pod: podOf("worker-0", controlledBy("PyTorchJob", "llm")),
			want: drain.Block, code: drain.CodeCustomController, inMessage: []string{"PyTorchJob llm", "--skip-nodes-with-custom-controller-pods=false"}},
		{name: "safe-to-evict true lets a pod without owner move",
			pod:  podOf("bare", func(p *podT) { p.OwnerReferences = nil }, annotated(drain.AnnotationSafeToEvict, "true")),
			want: drain.Undecided},
		{name: "safe-to-evict true lets a custom controller pod move",
			pod: podOf("worker-0", controlledBy("PyTorchJob", "llm"), annotated(drain.AnnotationSafeToEvict, "true")), want: drain.Undecided},
	})
	runRuleCases(t, drain.RuleNoController{AllowCustomControllers: true}, []ruleCase{
		{name: "custom controller may move when allowed", pod: podOf("worker-0", controlledBy("PyTorchJob", "llm")), want: drain.Undecided},
		{name: "pod without owner still blocks when custom controllers are allowed", pod: podOf("bare", func(p *podT) { p.OwnerReferences = nil }),
			want: drain.Block, code: drain.CodeNotReplicated},
	})
}
