package consolidation_test

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// --min-replica-count reads the replica counts the loop hands in: a pod of
// a ReplicaSet with enough replicas moves, one with too few keeps its node,
// and without the counts the rule cannot tell and keeps it (as scale-down).
func TestMinReplicaCountReadsTheReplicas(t *testing.T) {
	build := func() *cluster {
		c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77).group("a100x1", gpuNode(1, "8", "64Gi"), 4.10)
		var big []*v1.Pod
		for _, n := range []string{"b0", "b1", "b2", "b3", "b4", "b5", "b6"} {
			big = append(big, gpuPod(n, 1))
		}
		return c.node("big", "a100x8", big...).node("small", "a100x1", gpuPod("solo", 1))
	}
	o := immediate()
	o.Drain.MinReplicaCount = 2
	key := drain.ControllerKey{Namespace: "default", Kind: "ReplicaSet", Name: "train-solo"}
	p := plan(t, build(), o, func(in *consolidation.Input) { in.Replicas = drain.Replicas{key: 3} })
	if len(p.Moves) != 1 || !slices.Equal(moveNodes(p.Moves[0]), []string{"small"}) {
		t.Fatalf("ReplicaSet with 3 replicas, --min-replica-count=2: want small deleted:%s", summary(p))
	}
	p = plan(t, build(), o, func(in *consolidation.Input) { in.Replicas = drain.Replicas{key: 1} })
	if k := kept(t, p, "small"); len(p.Moves) != 0 || k.PodCode != drain.CodeMinReplicasReached {
		t.Fatalf("ReplicaSet with 1 replica: want small kept for %s:%s", drain.CodeMinReplicasReached, summary(p))
	}
	p = plan(t, build(), o, nil)
	if k := kept(t, p, "small"); len(p.Moves) != 0 || k.PodCode != drain.CodeControllerNotFound {
		t.Fatalf("no replica counts: want small kept for %s:%s", drain.CodeControllerNotFound, summary(p))
	}
}
