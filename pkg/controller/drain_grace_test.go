package controller

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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
