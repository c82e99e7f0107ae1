package faults_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hold is a finalizer that keeps a deleted pod terminating until the test
// lets it go.
const hold = "gpuscale.dev/e2e-hold"

// release drops the hold finalizer from the app's pods.
func (s *scope) release(app string) {
	s.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{}}})
	for _, p := range s.pods(app) {
		_, err := s.c.Client.CoreV1().Pods(s.ns).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			s.t.Fatal(err)
		}
	}
}

// Fault: overprovisioning meets preemption, in the setup upstream
// documents: pause pods of a PriorityClass with value -1 (above the default
// --expendable-pods-priority-cutoff of -10, so they order nodes) hold room;
// a real workload (priority 0) preempts one through the real
// kube-scheduler. The preemptor, nominated onto the pause pod's node,
// buys no node; the pause pod its ReplicaSet makes again does (it is
// pending and not expendable), so the headroom comes back: one extra node,
// not two.
func TestOverprovisioningWithPreemption(t *testing.T) {
	s := newScope(t, "overprov")
	ctx := context.Background()
	class := s.ns + "-overprovisioning"
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: -1,
		Description: "pause pods that hold room for real workloads"}
	if _, err := s.c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.c.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	cfg := s.kwokConfig(8*time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	target := func() int { return s.instances("cpu") }
	s.start(s.options("a"), startOptions{Config: cfg})
	s.deploy(workload{name: "pause", replicas: 1, cpu: "3", priorityClass: class, finalizers: []string{hold}})
	eventually(t, 60*time.Second, "the pause pod to run on a node of its own", func() bool { return s.running("pause") == 1 })
	if n := target(); n != 1 {
		t.Fatalf("%d nodes for the pause pod, want 1", n)
	}

	most := peak(target)
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"})
	var nominated string
	eventually(t, 30*time.Second, "the scheduler to preempt the pause pod and nominate web onto its node", func() bool {
		for _, p := range s.pods("web") {
			nominated = p.Status.NominatedNodeName
		}
		return nominated != ""
	})
	eventually(t, 30*time.Second, "the replacement pause pod to order a node", func() bool { return target() == 2 })
	time.Sleep(4 * time.Second) // more loops while web waits for its victim
	if p := most(); p != 2 {
		t.Fatalf("nodes (with those asked for) peaked at %d, want 2: one for the pause pod made again, none for the preemptor", p)
	}
	s.release("pause")
	eventually(t, 60*time.Second, "web to run where it was nominated and the pause pod on the new node", func() bool {
		for _, p := range s.pods("web") {
			if p.Spec.NodeName != nominated || s.running("web") != 1 {
				return false
			}
		}
		return s.running("pause") == 1
	})
	if n := target(); n != 2 {
		t.Errorf("%d nodes at the end, want 2", n)
	}
}
