package scaledown_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// A pod annotated safe-to-evict "on-completion" is not evicted: its node is
// unneeded, its clock runs, and it waits while the pod runs; once the pod
// has completed, the node goes in the next loop.
func TestPlanWaitsForOnCompletionPods(t *testing.T) {
	train := podEdit(rs("train-0", "500m"), func(p *v1.Pod) {
		p.Annotations = map[string]string{drain.AnnotationSafeToEvict: drain.SafeToEvictOnCompletion}
		p.Spec.RestartPolicy = v1.RestartPolicyNever
	})
	c := newCluster(t).group("pool", 0, 2)
	c.node(node4("a").Build(), "pool", train, rs("web-0", "500m"))
	busy(c, "b", "pool")
	pl := newPlanner(t, immediate())

	p := pl.Plan(c.input(t0))
	if len(p.Delete) != 0 {
		t.Fatalf("removed %v while an on-completion pod runs", deleted(p))
	}
	k := kept(t, p, "a")
	if k.Reason != scaledown.ReasonOnCompletionPod || !strings.Contains(k.Message, "pod default/train-0 is annotated") ||
		!strings.Contains(k.Message, "safe-to-evict=on-completion") {
		t.Errorf("a kept for %s (%q), want BlockedByOnCompletionPod naming the pod", k.Reason, k.Message)
	}
	if len(p.Unneeded) != 1 || p.Unneeded[0].Node != "a" || p.Unneeded[0].Reason != scaledown.ReasonOnCompletionPod {
		t.Errorf("unneeded %+v, want a, unneeded and waiting for its pod", p.Unneeded)
	}

	// The pod completes: the node goes at once, its other pod evicted.
	train.Status.Phase = v1.PodSucceeded
	p = pl.Plan(c.input(t0.Add(time.Minute)))
	if got := deleted(p); len(got) != 1 || got[0] != "a" {
		t.Fatalf("after completion removed %v, want a", got)
	}
	if r := removal(t, p, "a"); len(r.Evict) != 1 || r.Evict[0].Pod.Name != "web-0" {
		t.Errorf("evicts %+v, want only web-0 (the completed pod needs no home)", r.Evict)
	}
}

// An old kube-system pod without a budget no longer keeps its node.
func TestPlanSystemPodTimeout(t *testing.T) {
	dns := func(age time.Duration) *v1.Pod {
		return podEdit(rs("dns", "500m"), func(p *v1.Pod) {
			p.Namespace = metav1.NamespaceSystem
			p.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		})
	}
	runPlanCases(t, []planCase{
		{name: "young kube-system pod keeps the node",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", dns(10*time.Minute))
				busy(c, "b", "pool")
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonBlockedByPod}},
		{name: "kube-system pod older than the timeout moves",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", dns(2*time.Hour))
				busy(c, "b", "pool")
			},
			wantDelete: []string{"a"}},
		{name: "a longer timeout keeps it",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", dns(2*time.Hour))
				busy(c, "b", "pool")
			},
			opts:     func(o *scaledown.Options) { o.BlockingSystemPodDisruptionTimeout = 3 * time.Hour },
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonBlockedByPod}},
	})
}

// --min-replica-count reads the replica counts the shell passes.
func TestPlanMinReplicaCount(t *testing.T) {
	build := func(c *cluster) {
		c.group("pool", 0, 2)
		c.node(node4("a").Build(), "pool", rs("web-0", "500m"))
		busy(c, "b", "pool")
	}
	one := drain.Replicas{{Namespace: "default", Kind: "ReplicaSet", Name: "web"}: 1}
	three := drain.Replicas{{Namespace: "default", Kind: "ReplicaSet", Name: "web"}: 3}
	runPlanCases(t, []planCase{
		{name: "a ReplicaSet below the minimum keeps the node", build: build,
			opts: func(o *scaledown.Options) { o.MinReplicaCount = 2 }, input: func(in *scaledown.Input) { in.Replicas = one },
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonBlockedByPod},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "a"); k.PodCode != drain.CodeMinReplicasReached {
					t.Errorf("pod code %s, want MinReplicasReached", k.PodCode)
				}
			}},
		{name: "at or above it the node goes", build: build,
			opts: func(o *scaledown.Options) { o.MinReplicaCount = 2 }, input: func(in *scaledown.Input) { in.Replicas = three },
			wantDelete: []string{"a"}},
		{name: "off by default", build: build, input: func(in *scaledown.Input) { in.Replicas = one }, wantDelete: []string{"a"}},
	})
}
