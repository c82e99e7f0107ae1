package faults_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// Fault: a spot node is told it will be taken away (the AWS Node
// Termination Handler's spot interruption taint, two minutes' notice).
// The loop that sees the taint orders the pod's replacement capacity, on
// demand since the spot group is being reclaimed; the node is drained and
// deleted, and the pod runs again on the new node before the notice ends.
// Nothing is lost: the workload's one replica runs, on one node.
func TestSpotInterruptionIsReplacedWithinTheNotice(t *testing.T) {
	s := newScope(t, "interrupt")
	cfg := s.kwokConfig(2*time.Second,
		groupSpec{name: "spot", max: 3, cpu: "8", gpus: 1, price: 1, spot: true},
		groupSpec{name: "ondemand", max: 3, cpu: "8", gpus: 1, price: 3})
	o := s.options("a")
	o.Autoscaler.ScaleUp.Expander = "price"
	o.Autoscaler.ClusterState.Backoff.Initial = 5 * time.Minute
	o.Autoscaler.ClusterState.Backoff.Max = 30 * time.Minute
	s.start(o, startOptions{Config: cfg})
	s.deploy(workload{name: "train", replicas: 1, cpu: "1", gpus: 1})
	eventually(t, 60*time.Second, "the pod to run on a spot node", func() bool {
		return s.running("train") == 1 && len(s.nodes("spot")) == 1
	})
	spot := s.nodes("spot")[0].Name
	notice := 2 * time.Minute
	signalled := time.Now()
	s.taint(spot, v1.Taint{Key: autoscaler.TaintAWSSpotInterruption, Value: "1234567890", Effect: v1.TaintEffectNoSchedule})
	eventually(t, 20*time.Second, "the replacement to be ordered", func() bool { return s.instances("ondemand") > 0 })
	t.Logf("replacement ordered %s after the signal", time.Since(signalled).Round(100*time.Millisecond))
	eventually(t, notice, "the pod to run again on the new node", func() bool {
		for _, p := range s.pods("train") {
			if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != spot {
				return true
			}
		}
		return false
	})
	t.Logf("pod running again %s after the signal (notice %s)", time.Since(signalled).Round(100*time.Millisecond), notice)
	eventually(t, notice-time.Since(signalled), "the interrupted node to be deleted", func() bool { return len(s.nodes("spot")) == 0 })
	if n := s.running("train"); n != 1 {
		t.Errorf("%d replicas running, want 1", n)
	}
	if n := s.instances("spot"); n != 0 {
		t.Errorf("%d spot instances, want none: the interrupted pool is backed off", n)
	}
	if n := s.instances("ondemand"); n != 1 {
		t.Errorf("%d on-demand instances, want the one replacement", n)
	}
}
