package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// Fault: two shards on one cluster, each with its own node groups, Lease
// and status ConfigMap, and pods that groups of both could take.
//
// No pod is scaled up twice: shard a scales up for the pods and claims
// them; shard b, starting while a's nodes are on their way, leaves the
// pods alone and says so on each. Neither touches the other's nodes: a
// shard restarting mid-drain clears the removal taints of its own nodes
// only, and the other shard's drain keeps its taint.
func TestTwoShards(t *testing.T) {
	s := newScope(t, "shards")
	ctx := context.Background()
	shard := func(name string) controller.Options {
		peer := map[string]string{"a": "b", "b": "a"}[name]
		o := s.options("shard-" + name)
		o.StatusConfigMapName = "status-" + name
		o.Sharding.Peers = []string{"status-" + peer}
		o.LeaderElection.Enabled = true
		o.LeaderElection.Name = "lease-" + name
		o.LeaderElection.Identity = "shard-" + name
		o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
		o.Autoscaler.ScaleDownEnabled = false // the second part plants removals of its own
		return o
	}
	cfg := map[string]startOptions{
		"a": {Config: s.kwokConfig(8*time.Second, groupSpec{name: "a", max: 5, cpu: "4"})},
		"b": {Config: s.kwokConfig(8*time.Second, groupSpec{name: "b", max: 5, cpu: "4"})},
	}
	total := func() int { return s.instances("a", "b") }
	most := peak(total)
	a := s.start(shard("a"), cfg["a"])
	s.deploy(workload{name: "web", replicas: 2, cpu: "3"}) // two pods, one node each
	eventually(t, 30*time.Second, "shard a to scale up and publish its claims", func() bool {
		cm, err := s.c.Client.CoreV1().ConfigMaps(s.ns).Get(ctx, "status-a", metav1.GetOptions{})
		return err == nil && cm.Data[controller.ClaimsKey] != "" && cm.Data[controller.ClaimsKey] != `{"claims":null}` && s.pendingEntries() == 2
	})
	b := s.start(shard("b"), cfg["b"])
	eventually(t, 60*time.Second, "web to run", func() bool { return s.running("web") == 2 })
	time.Sleep(2 * time.Second)
	if p := most(); p != 2 {
		t.Fatalf("nodes (with those asked for) of both shards peaked at %d, want 2: each pod scaled up once", p)
	}
	if n := len(s.nodes("b")); n != 0 {
		t.Errorf("shard b bought %d node(s) for pods shard a claimed", n)
	}
	if len(s.events("ScaleUpClaimedByShard")) == 0 {
		t.Errorf("no pod says that another shard claimed its scale-up")
	}

	// Part two: both shards are mid-drain (ToBeDeleted on every node) and
	// shard b restarts. It clears its own node's taint only.
	s.handNode(s.ns+"-b0", "b", "4", true)
	a.stop()
	b.stop()
	for _, g := range []string{"a", "b"} {
		for _, n := range s.nodes(g) {
			s.taint(n.Name, v1.Taint{Key: disruption.TaintToBeDeleted, Value: fmt.Sprint(time.Now().Unix()), Effect: v1.TaintEffectNoSchedule})
		}
	}
	s.start(shard("b"), cfg["b"])
	eventually(t, 30*time.Second, "the restarted shard b to clear its own node's taint", func() bool { return !s.hasTaint(s.ns+"-b0", disruption.TaintToBeDeleted) })
	time.Sleep(3 * time.Second)
	for _, n := range s.nodes("a") {
		if !s.hasTaint(n.Name, disruption.TaintToBeDeleted) {
			t.Errorf("shard b took the removal taint off node %s of shard a", n.Name)
		}
	}
	s.start(shard("a"), cfg["a"])
	eventually(t, 30*time.Second, "shard a to clear its own", func() bool { return s.tainted() == "" })
}

// events lists the messages of the scope's pod events with a reason.
func (s *scope) events(reason string) []string {
	l, err := s.c.Client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "Pod" {
			out = append(out, e.Message)
		}
	}
	return out
}

func (s *scope) taint(node string, taint v1.Taint) {
	s.t.Helper()
	n, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, taint)
	if _, err := s.c.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scope) hasTaint(node, key string) bool {
	n, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, tt := range n.Spec.Taints {
		if tt.Key == key {
			return true
		}
	}
	return false
}
