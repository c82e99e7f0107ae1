package faults_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A GPU group backed by a capacity block with one reserved node, dearer
// than on demand: the price expander grows it first, its node being paid
// for. When the block's end comes within the drain lead (40m by default),
// the pod's replacement is ordered on demand, the pod runs again there and
// the block's node is drained and deleted, long before the cloud would
// terminate it; the block group is not grown again.
func TestCapacityBlockIsLeftBeforeItEnds(t *testing.T) {
	s := newScope(t, "block")
	end := time.Now().Add(40*time.Minute + 20*time.Second).UTC().Truncate(time.Second) // RFC 3339 in whole seconds
	cfg := s.kwokConfig(2*time.Second,
		groupSpec{name: "block", max: 3, cpu: "8", gpus: 1, price: 3,
			options: fmt.Sprintf("{reservednodes: 1, capacityblockend: %q}", end.Format(time.RFC3339))},
		groupSpec{name: "ondemand", max: 3, cpu: "8", gpus: 1, price: 2})
	o := s.options("a")
	o.Autoscaler.ScaleUp.Expander = "price"
	s.start(o, startOptions{Config: cfg})
	s.deploy(workload{name: "train", replicas: 1, cpu: "1", gpus: 1})
	eventually(t, 15*time.Second, "the pod to run on the reserved block node", func() bool {
		return s.running("train") == 1 && len(s.nodes("block")) == 1
	})
	if n := s.instances("ondemand"); n != 0 {
		t.Fatalf("%d on-demand instances before the lead, want none: the reservation is used first", n)
	}
	block := s.nodes("block")[0].Name
	lead := end.Add(-40 * time.Minute)
	eventually(t, time.Until(lead)+15*time.Second, "the replacement to be ordered on demand", func() bool { return s.instances("ondemand") > 0 })
	t.Logf("replacement ordered %s after the lead began", time.Since(lead).Round(100*time.Millisecond))
	eventually(t, 30*time.Second, "the pod to run again on demand", func() bool {
		for _, p := range s.pods("train") {
			if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != block {
				return true
			}
		}
		return false
	})
	eventually(t, 30*time.Second, "the block's node to be deleted", func() bool { return len(s.nodes("block")) == 0 })
	t.Logf("block node gone %s after the lead began", time.Since(lead).Round(100*time.Millisecond))
	if n := s.instances("block"); n != 0 {
		t.Errorf("%d block instances, want none: the ending block is backed off", n)
	}
	if n := s.running("train"); n != 1 {
		t.Errorf("%d replicas running, want 1", n)
	}
}
