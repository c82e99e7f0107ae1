package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// Fault: the leader loses its Lease in the middle of a drain: another
// replica takes the Lease over (the test writes itself in as the holder,
// as a replica whose renewal won the race would) while the drained pod is
// still terminating. The old leader stops acting; the new one clears the
// removal's taint or finishes the removal; nothing is left stranded and
// the workload keeps its replicas.
func TestLeaderLostMidDrain(t *testing.T) {
	s := newScope(t, "leader")
	ctx := context.Background()
	cfg := s.kwokConfig(time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	for i := range 2 {
		s.handNode(fmt.Sprintf("%s-n%d", s.ns, i), "cpu", "4", true)
	}
	eventually(t, 30*time.Second, "both nodes to be Ready and schedulable", func() bool {
		return s.schedulable(s.ns+"-n0") && s.schedulable(s.ns+"-n1")
	})
	// One pod on each node (the scheduler prefers them there; the
	// autoscaler may move them); each node is a quarter used, so one of
	// them is drained onto the other.
	for i, app := range []string{"web", "api"} {
		s.deploy(workload{name: app, replicas: 1, cpu: "1", finalizers: []string{hold}, preferNode: fmt.Sprintf("%s-n%d", s.ns, i)})
	}
	eventually(t, 60*time.Second, "web and api to run", func() bool { return s.running("web")+s.running("api") == 2 })
	replica := func(id string) *replica {
		o := s.options(id)
		o.LeaderElection.Enabled = true
		o.LeaderElection.Identity = id
		o.LeaderElection.LeaseDuration = 4 * time.Second
		o.LeaderElection.RenewDeadline = 3 * time.Second
		o.LeaderElection.RetryPeriod = 500 * time.Millisecond
		return s.start(o, startOptions{Config: cfg})
	}
	holder := func() string {
		l, err := s.c.Client.CoordinationV1().Leases(s.ns).Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	a := replica("replica-a")
	eventually(t, 20*time.Second, "replica-a to lead", func() bool { return holder() == "replica-a" })
	replica("replica-b")
	eventually(t, 60*time.Second, "the drain to start (a node tainted, a pod terminating)", func() bool {
		return s.tainted() != "" && s.terminating("web")+s.terminating("api") == 1
	})
	drained := s.tainted()

	// The takeover: replica-b is written in as the holder, retrying when
	// replica-a's renewal wins the race for the object.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := s.c.Client.CoordinationV1().Leases(s.ns).Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To("replica-b"), &now, &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		_, err = s.c.Client.CoordinationV1().Leases(s.ns).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	a.stopped(t, 20*time.Second)
	if a.err == nil || !strings.Contains(a.err.Error(), "lost the leader Lease") {
		t.Errorf("replica-a returned %v, want the Lease lost", a.err)
	}
	if holder() != "replica-b" {
		t.Fatalf("holder %q after the takeover", holder())
	}
	s.release("web") // the evicted pod may finish terminating now
	s.release("api")
	eventually(t, 90*time.Second, "nothing stranded: web and api run and no node keeps a removal's taint", func() bool {
		return s.running("web") == 1 && s.running("api") == 1 && s.tainted() == ""
	})
	t.Logf("node %s was drained when the Lease changed hands; it is now %s", drained, s.fate(drained))
}

// tainted is a node of the scope carrying ToBeDeletedByClusterAutoscaler,
// "" for none.
func (s *scope) tainted() string {
	l, err := s.c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: LabelScope + "=" + s.ns})
	if err != nil {
		return ""
	}
	for _, n := range l.Items {
		for _, tt := range n.Spec.Taints {
			if tt.Key == disruption.TaintToBeDeleted {
				return n.Name
			}
		}
	}
	return ""
}

// fate says whether a node is still there.
func (s *scope) fate(node string) string {
	if _, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{}); err != nil {
		return "removed"
	}
	return "kept, untainted"
}

func (s *scope) terminating(app string) int {
	n := 0
	for _, p := range s.pods(app) {
		if p.DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

// stopped waits for the replica to return on its own.
func (r *replica) stopped(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case r.err = <-r.done:
		r.once.Do(func() {})
	case <-time.After(timeout):
		t.Fatalf("the replica still runs %s after losing its Lease", timeout)
	}
}

// schedulable: the node is Ready and carries no NoSchedule taint.
func (s *scope) schedulable(node string) bool {
	n, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, tt := range n.Spec.Taints {
		if tt.Effect == v1.TaintEffectNoSchedule || tt.Effect == v1.TaintEffectNoExecute {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
