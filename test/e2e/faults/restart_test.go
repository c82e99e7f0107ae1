package faults_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
)

// Fault: the autoscaler is killed between asking for a node and the node
// registering, and a new instance (no memory of the request) takes over.
// It finds the group's target above its nodes and counts the node asked
// for as upcoming: one node, never two.
func TestAutoscalerKilledMidScaleUp(t *testing.T) {
	s := newScope(t, "killed")
	cfg := s.kwokConfig(8*time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	target := func() int { return s.instances("cpu") }
	first := s.start(s.options("first"), startOptions{Config: cfg})
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"})
	eventually(t, 30*time.Second, "the scale-up to be asked for", func() bool { return s.pendingEntries() == 1 })
	first.stop()
	most := peak(target)
	s.start(s.options("second"), startOptions{Config: cfg})
	eventually(t, 60*time.Second, "web to run", func() bool { return s.running("web") == 1 })
	time.Sleep(3 * time.Second) // a few more loops of the new instance
	if p := most(); p != 1 {
		t.Fatalf("the group's target peaked at %d across the restart, want 1 (one node for one pod)", p)
	}
	if !strings.Contains(s.logs.String(), "scaled up") || strings.Count(s.logs.String(), `msg="scaled up"`) != 1 {
		t.Errorf("want exactly one scale-up logged, by the first instance:\n%s", s.logs.String())
	}
}

// Fault: a node that never registers (its instance boots, its kubelet
// never joins: a broken GPU driver or image), with the autoscaler killed
// and restarted after the scale-up. The new instance dates the scale-up
// by the instance's creation, backs the group off after the provisioning
// time, deletes the instance after the unregistered-node removal time
// (lowering the target), and the next scale-up brings a node that joins.
func TestNodeThatNeverRegisters(t *testing.T) {
	s := newScope(t, "noreg")
	cfg := s.kwokConfig(time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	var mu sync.Mutex
	stuck := ""
	faults := kwok.Faults{NeverRegister: func(_, node string) bool {
		mu.Lock()
		defer mu.Unlock()
		if stuck == "" {
			stuck = node
		}
		return node == stuck
	}}
	so := startOptions{Config: cfg, Faults: faults}
	o := s.options("first")
	o.Autoscaler.ClusterState.MaxNodeProvisionTime = 6 * time.Second
	o.Autoscaler.ClusterState.UnregisteredNodeRemovalTime = 10 * time.Second
	target := func() int { return s.instances("cpu") }
	most := peak(target)
	first := s.start(o, so)
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"})
	eventually(t, 30*time.Second, "the scale-up to be asked for", func() bool { return s.pendingEntries() == 1 })
	first.stop()
	o2 := s.options("second")
	o2.Autoscaler.ClusterState = o.Autoscaler.ClusterState
	start := time.Now()
	s.start(o2, so)
	eventually(t, 90*time.Second, "web to run on a node that joined", func() bool { return s.running("web") == 1 })
	took := time.Since(start)
	if p := most(); p != 1 {
		t.Errorf("the group's target peaked at %d, want 1: the stuck instance is given back before another is asked for", p)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "deleting instances that never registered") || !strings.Contains(logs, "kwok://"+stuck) {
		t.Errorf("the stuck instance %s was not deleted as never registered:\n%s", stuck, logs)
	}
	if n := s.nodes("cpu"); len(n) != 1 || n[0].Name == stuck {
		t.Errorf("nodes %d, want the one that joined", len(n))
	}
	t.Logf("recovered %s after the restart (provisioning time 6s, removal time 10s)", took.Round(time.Second))
}
