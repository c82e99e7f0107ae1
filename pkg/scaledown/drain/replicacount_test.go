package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Upstream's replicacount rule, --min-replica-count.
func TestRuleMinReplicaCount(t *testing.T) {
	counts := drain.Replicas{
		{Namespace: "default", Kind: "ReplicaSet", Name: "web-1"}:         1,
		{Namespace: "default", Kind: "ReplicaSet", Name: "big"}:           5,
		{Namespace: "default", Kind: "ReplicationController", Name: "rc"}: 2,
	}
	withCounts := ctx()
	withCounts.Replicas = counts
	rule := drain.RuleMinReplicaCount{Min: 2}
	runRuleCases(t, rule, []ruleCase{
		{name: "a ReplicaSet below the minimum blocks", pod: podOf("web-1-x"), ctx: withCounts,
			want: drain.Block, code: drain.CodeMinReplicasReached, inMessage: []string{"ReplicaSet web-1", "1 replica(s)", "--min-replica-count=2"}},
		{name: "a ReplicaSet at the minimum may move", pod: podOf("rc-x", controlledBy("ReplicationController", "rc")), ctx: withCounts,
			want: drain.Undecided},
		{name: "above it may move", pod: podOf("big-x", controlledBy("ReplicaSet", "big")), ctx: withCounts, want: drain.Undecided},
		{name: "an unknown ReplicaSet cannot be checked", pod: podOf("gone-x", controlledBy("ReplicaSet", "gone")), ctx: withCounts,
			want: drain.Block, code: drain.CodeControllerNotFound},
		{name: "other controllers are for other rules", pod: podOf("job-x", controlledBy("Job", "j")), ctx: withCounts, want: drain.Undecided},
		{name: "no controller is for other rules", pod: podOf("bare", ownedNotControlled), ctx: withCounts, want: drain.Undecided},
	})
	runRuleCases(t, drain.RuleMinReplicaCount{}, []ruleCase{
		{name: "0 is off", pod: podOf("web-1-x"), ctx: withCounts, want: drain.Undecided},
	})
	// In the default chain, safe-to-evict "true" does not override it, and
	// it runs only with --skip-nodes-with-custom-controller-pods.
	o := drain.DefaultOptions()
	o.MinReplicaCount = 2
	pod := podOf("web-1-x", annotated(drain.AnnotationSafeToEvict, "true"))
	if v := drain.Default(o).Evaluate(withCounts, pod); v.Code != drain.CodeMinReplicasReached {
		t.Errorf("safe-to-evict=true: %s/%s, want MinReplicasReached", v.Outcome, v.Code)
	}
	o.SkipNodesWithCustomControllerPods = false
	if v := drain.Default(o).Evaluate(withCounts, pod); v.Outcome == drain.Block {
		t.Errorf("without --skip-nodes-with-custom-controller-pods: %s/%s, want the rule off", v.Outcome, v.Code)
	}
}
