package removal_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The wait policy is the caller's: a pod that runs to completion keeps its
// node for consolidation (WaitKeeps) and only delays it for scale-down.
func TestJudgeWaitPolicy(t *testing.T) {
	snap := snapshot.New()
	if err := snap.AddNode(builder.Node("n").CPU("4").Memory("8Gi").Build()); err != nil {
		t.Fatal(err)
	}
	job := builder.Pod("train").CPU("1").Annotation(drain.AnnotationSafeToEvict, drain.SafeToEvictOnCompletion).OnNode("n").Build()
	if err := snap.AddPod(job); err != nil {
		t.Fatal(err)
	}
	ni := snap.Node("n")
	for _, keeps := range []bool{false, true} {
		j := removal.Judge{Rules: drain.Default(drain.DefaultOptions()), WaitKeeps: keeps}
		j.Reset(drain.Context{Now: time.Unix(0, 0)})
		var jd removal.Judged
		b, ok := j.First(ni, &jd)
		switch {
		case keeps && (ok || b.Pod.Name != "train" || b.Verdict.Code != drain.CodeOnCompletion):
			t.Errorf("WaitKeeps: ok %v, blocked by %v, want the on-completion pod to keep its node", ok, b.Pod)
		case !keeps && (!ok || jd.Waits == nil || jd.Waits.Name != "train" || jd.Moving != 0):
			t.Errorf("without WaitKeeps: ok %v, %+v; want the node free to go once train completes, nothing to move", ok, jd)
		}
	}
}
