package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// Each eviction asks for the pod's own grace period, capped at
// --max-graceful-termination-sec: a checkpointing job that asks for an hour
// gets the cap, a pod that asks for less keeps its own.
func TestEvictionGraceIsCapped(t *testing.T) {
	long := builder.Pod("long").OnNode("n").Build()
	long.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600)
	short := builder.Pod("short").OnNode("n").Build()
	short.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	client := fake.NewClientset(long, short)
	asked := map[string]int64{}
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		asked[ev.Name] = *ev.DeleteOptions.GracePeriodSeconds
		return true, nil, client.Tracker().Delete(podsResource, ev.Namespace, ev.Name)
	})
	clk := clocktesting.NewFakeClock(t0)
	err := evictAll(context.Background(), client, clk, []*v1.Pod{long, short}, nil,
		drainOptions{MaxPodEvictionTime: time.Minute, MaxGracefulTermination: 10 * time.Minute, RetryInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if asked["long"] != 600 || asked["short"] != 30 {
		t.Errorf("grace periods asked %v, want long capped at 600 s and short at its own 30 s", asked)
	}
}

// A failed eviction is tried again within --max-pod-eviction-time, as the
// Cluster Autoscaler does: a server error or a timeout may clear. A
// conflict (409) on an eviction means the pod was replaced only when the
// API server no longer holds a pod of that UID; otherwise it is a write
// that conflicted inside the server, and the eviction is tried again
// rather than waited out for the whole grace period.
func TestFailedEvictionIsRetriedUnlessThePodWasReplaced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replace  bool
		attempts int
		// err is the first attempt's error; a conflict when nil.
		err error
	}{
		{name: "transient conflict", attempts: 2},
		{name: "pod replaced", replace: true, attempts: 1},
		{name: "transient server error", attempts: 2, err: apierrors.NewInternalError(errors.New("webhook unavailable"))},
		{name: "eviction timed out", attempts: 2, err: apierrors.NewTimeoutError("the request timed out", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := builder.Pod("w").OnNode("n").Build()
			pod.UID = "uid-old"
			client := fake.NewClientset(pod)
			attempts := 0
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				attempts++
				ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
				if attempts == 1 {
					if tc.replace {
						fresh := pod.DeepCopy()
						fresh.UID, fresh.Spec.NodeName = "uid-new", ""
						if err := client.Tracker().Update(podsResource, fresh, fresh.Namespace); err != nil {
							t.Fatal(err)
						}
					}
					if tc.err != nil {
						return true, nil, tc.err
					}
					return true, nil, apierrors.NewConflict(podsResource.GroupResource(), ev.Name, errors.New("the object has been modified"))
				}
				return true, nil, client.Tracker().Delete(podsResource, ev.Namespace, ev.Name)
			})
			clk := clocktesting.NewFakeClock(t0)
			err := evictDriven(t, client, clk, []*v1.Pod{pod})
			if err != nil {
				t.Fatal(err)
			}
			if attempts != tc.attempts {
				t.Errorf("%d eviction attempts, want %d", attempts, tc.attempts)
			}
			if waited := clk.Since(t0); waited > time.Minute {
				t.Errorf("the drain took %s of the clock, want the eviction retried within --max-pod-eviction-time", waited)
			}
		})
	}
}

// Each pod is looked at again before every eviction attempt: a pod
// annotated do-not-disrupt while an earlier pod's eviction waited to be
// tried again is not evicted, and the drain fails.
func TestPodAnnotatedDuringTheDrainIsNotEvicted(t *testing.T) {
	first := builder.Pod("first").OnNode("n").Build()
	second := builder.Pod("second").OnNode("n").Build()
	client := fake.NewClientset(first, second)
	var evicted []string
	attempts := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		attempts++
		if attempts == 1 {
			// Meanwhile the second pod's owner protects it.
			p := second.DeepCopy()
			p.Annotations = map[string]string{"gpuscale.dev/do-not-disrupt": "true"}
			if err := client.Tracker().Update(podsResource, p, p.Namespace); err != nil {
				t.Fatal(err)
			}
			return true, nil, apierrors.NewConflict(podsResource.GroupResource(), ev.Name, errors.New("the object has been modified"))
		}
		evicted = append(evicted, ev.Name)
		return true, nil, client.Tracker().Delete(podsResource, ev.Namespace, ev.Name)
	})
	clk := clocktesting.NewFakeClock(t0)
	err := evictDriven(t, client, clk, []*v1.Pod{first, second})
	if err == nil || !strings.Contains(err.Error(), "do-not-disrupt") {
		t.Errorf("drain error %v, want one naming the do-not-disrupt annotation", err)
	}
	if len(evicted) != 1 || evicted[0] != "first" {
		t.Errorf("evicted %v, want only the first pod", evicted)
	}
}

// evictDriven runs evictAll on pods with a one-minute eviction time and a
// one-second retry, stepping the fake clock while it waits.
func evictDriven(t *testing.T, client *fake.Clientset, clk *clocktesting.FakeClock, pods []*v1.Pod) error {
	t.Helper()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = evictAll(context.Background(), client, clk, pods, nil,
			drainOptions{MaxPodEvictionTime: time.Minute, MaxGracefulTermination: 10 * time.Minute, RetryInterval: time.Second})
	}()
	drive(t, clk, done, time.Second)
	return err
}
