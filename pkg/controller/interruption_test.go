package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// A node being taken away is drained within its notice: a pod free to go
// is evicted at once, one a disruption budget holds is retried through the
// Eviction API until the last part of the notice and then deleted past its
// budget, each with its grace period capped at the time left; DaemonSet
// pods stay; the node is deleted through the provider and the removal
// reported done before the notice ends. A pod pushed out first keeps no
// later pod waiting.
func TestInterruptedNodeIsDrainedWithinItsNotice(t *testing.T) {
	held := replicated(builder.Pod("held").OnNode("n").Build())
	held.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	free := replicated(builder.Pod("free").OnNode("n").Build())
	ds := builder.Pod("agent").OnNode("n").Build()
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
	client := fake.NewClientset(groupNode("n", "g"), held, free, ds)
	clk := clocktesting.NewFakeClock(t0)
	evictedAt := map[string]time.Time{}
	var attempts []string
	var deletedAt time.Time
	var deletedGrace int64
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		attempts = append(attempts, name)
		if name == "held" {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		evictedAt[name] = clk.Now()
		return true, nil, client.Tracker().Delete(podsResource, a.GetNamespace(), name)
	})
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletedAt = clk.Now()
		deletedGrace = *a.(k8stesting.DeleteActionImpl).DeleteOptions.GracePeriodSeconds
		return false, nil, nil
	})
	cp := &groupsProvider{groups: []string{"g"}}
	act := testActuator(client, cp, clk)
	deadline := t0.Add(2 * time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		act.RemoveNodes(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: 10 * time.Minute,
			Removals: []disruption.Removal{{Node: "n", Group: "g", Interruption: autoscaler.TaintAWSSpotInterruption, Deadline: deadline}}})
		act.wait()
	}()
	drive(t, clk, done, retryInterval)
	if got := outcomeOf(t, act.outcomes); got != "done n" {
		t.Fatalf("outcome %q, want done n", got)
	}
	if len(attempts) < 2 || attempts[0] != "free" && attempts[1] != "free" {
		t.Errorf("evictions tried %v: want the free pod in the first round, the held one not keeping it waiting", attempts)
	}
	if _, ok := evictedAt["agent"]; ok || !podExistsIn(client, "agent") {
		t.Errorf("the DaemonSet pod was evicted")
	}
	bypassAt := deadline.Add(-time.Minute) // half the notice: the grace cap is longer
	if deletedAt.Before(bypassAt) || deletedAt.After(deadline) || deletedGrace > int64(deadline.Sub(deletedAt).Seconds()) {
		t.Errorf("the held pod deleted at %v with %d s of grace: want from %v, its grace within the notice ending %v", deletedAt, deletedGrace, bypassAt, deadline)
	}
	if got := cp.deletedNodes(); len(got) != 1 || got[0] != "n" {
		t.Errorf("nodes deleted %v, want n", got)
	}
	if clk.Now().After(deadline) {
		t.Errorf("the drain ended at %v, after the notice (%v)", clk.Now(), deadline)
	}
}

func podExistsIn(c *fake.Clientset, name string) bool {
	_, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// A failed eviction (a conflict, a server error) of a pod that is still
// there is tried again in the next round, as in a voluntary drain: the pod
// is evicted, not left running on a node about to be deleted.
func TestInterruptedDrainRetriesAFailedEviction(t *testing.T) {
	for _, first := range []error{
		apierrors.NewConflict(podsResource.GroupResource(), "w", errors.New("the object has been modified")),
		apierrors.NewInternalError(errors.New("webhook unavailable")),
	} {
		t.Run(first.Error(), func(t *testing.T) {
			pod := replicated(builder.Pod("w").OnNode("n").Build())
			client := fake.NewClientset(groupNode("n", "g"), pod)
			clk := clocktesting.NewFakeClock(t0)
			attempts := 0
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				attempts++
				if attempts == 1 {
					return true, nil, first
				}
				return true, nil, client.Tracker().Delete(podsResource, a.GetNamespace(), "w")
			})
			cp := &groupsProvider{groups: []string{"g"}}
			act := testActuator(client, cp, clk)
			done := make(chan struct{})
			go func() {
				defer close(done)
				act.RemoveNodes(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: 10 * time.Minute,
					Removals: []disruption.Removal{{Node: "n", Group: "g", Interruption: autoscaler.TaintAWSSpotInterruption, Deadline: t0.Add(2 * time.Minute)}}})
				act.wait()
			}()
			drive(t, clk, done, retryInterval)
			if attempts != 2 || podExistsIn(client, "w") {
				t.Errorf("%d eviction attempts, pod still there: %v; want the eviction retried and the pod evicted", attempts, podExistsIn(client, "w"))
			}
		})
	}
}
