package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	goruntime "runtime"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

var staleTaint = v1.Taint{Key: disruption.TaintToBeDeleted, Value: "1", Effect: v1.TaintEffectNoSchedule}

// flakyProvider fails its first refreshFails refreshes.
type flakyProvider struct {
	groupsProvider
	refreshFails, refreshes atomic.Int32
}

func (p *flakyProvider) Refresh(context.Context) error {
	if p.refreshes.Add(1) <= p.refreshFails.Load() {
		return errors.New("cloud API unavailable")
	}
	return nil
}

func newTestController(t *testing.T, client *fake.Clientset, cp cloudprovider.CloudProvider, clk *clocktesting.FakeClock) *Controller {
	t.Helper()
	o := DefaultOptions()
	o.Address, o.LeaderElection.Enabled, o.Logger = "", false, quiet()
	if clk != nil {
		o.Clock = clk
	}
	c, err := New(client, cp, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownedNode is a node of group with a stale taint and, when owner is not
// empty, AnnotationTaintOwner.
func ownedNode(name, group, owner string) *v1.Node {
	n := groupNode(name, group, staleTaint)
	if owner != "" {
		n.Annotations = map[string]string{AnnotationTaintOwner: owner}
	}
	return n
}

// One node the API server refuses to update (an admission webhook, a 5xx)
// does not stop the clean-up of the others, and is reported by name; the
// loop tries it again once the refusals end.
func TestStaleTaintCleanUpGoesOnPastAFailedNode(t *testing.T) {
	client := fake.NewClientset(ownedNode("a", "ours", ""), ownedNode("b", "ours", ""), ownedNode("c", "ours", ""))
	refuse := true
	client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if refuse && a.(k8stesting.UpdateAction).GetObject().(*v1.Node).Name == "b" {
			return true, nil, apierrors.NewForbidden(v1.Resource("nodes"), "b", errors.New("denied by a webhook"))
		}
		return false, nil, nil
	})
	c := newTestController(t, client, &groupsProvider{groups: []string{"ours"}}, nil)
	r, err := c.cleanStaleTaints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Cleaned != 2 || len(r.Failed) != 1 || !strings.Contains(r.Failed[0].Error(), "node b: removing stale taint") {
		t.Errorf("cleaned %d, failed %v; want 2 cleaned and node b failed", r.Cleaned, r.Failed)
	}
	for _, n := range []string{"a", "c"} {
		if hasTaintNamed(t, client, n, staleTaint.Key) {
			t.Errorf("node %s keeps its stale taint", n)
		}
	}
	c.cluster.untaintOwed(context.Background())
	if !hasTaintNamed(t, client, "b", staleTaint.Key) {
		t.Fatal("node b lost its taint while updates of it were refused")
	}
	refuse = false
	c.cluster.untaintOwed(context.Background())
	if hasTaintNamed(t, client, "b", staleTaint.Key) {
		t.Error("node b keeps its stale taint after the loop's retry")
	}
}

// A taint this autoscaler wrote (its owner annotation) is cleaned even
// when the node's group left --nodes or discovery; one another shard
// wrote stays, even on a node of this instance's group.
func TestStaleTaintsFollowTheirOwner(t *testing.T) {
	const us = "kube-system/cluster-autoscaler-status"
	client := fake.NewClientset(ownedNode("left-group", "removed-group", us), ownedNode("no-group", "", us),
		ownedNode("shard-b", "ours", "kube-system/shard-b-status"), ownedNode("mine", "ours", ""),
		ownedNode("theirs", "other", ""))
	c := newTestController(t, client, &groupsProvider{groups: []string{"ours"}}, nil)
	r, err := c.cleanStaleTaints(context.Background())
	if err != nil || r.Cleaned != 3 || len(r.Failed) != 0 {
		t.Fatalf("cleaned %+v (%v), want 3", r, err)
	}
	for n, keep := range map[string]bool{"left-group": false, "no-group": false, "mine": false, "shard-b": true, "theirs": true} {
		if hasTaintNamed(t, client, n, staleTaint.Key) != keep {
			t.Errorf("node %s: keeps its taint %v, want %v", n, !keep, keep)
		}
	}
}

// A failed cloud refresh at start-up does not end the leader: the loop
// retries the clean-up, and acts only after it.
func TestLeaderSurvivesAFailedFirstRefresh(t *testing.T) {
	client := fake.NewClientset(ownedNode("mine", "ours", ""))
	cp := &flakyProvider{groupsProvider: groupsProvider{groups: []string{"ours"}}}
	cp.refreshFails.Store(1)
	clk := clocktesting.NewFakeClock(t0)
	c := newTestController(t, client, cp, clk)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- c.lead(ctx) }()
	limit := time.After(10 * time.Second)
	for hasTaintNamed(t, client, "mine", staleTaint.Key) {
		select {
		case err := <-ended:
			t.Fatalf("lead ended: %v", err)
		case <-limit:
			t.Fatalf("the stale taint was not cleaned after %d refreshes", cp.refreshes.Load())
		case <-time.After(time.Millisecond):
			// Informer sync polls, then scan ticks.
			if clk.HasWaiters() {
				clk.Step(time.Second)
			}
		}
	}
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("lead returned %v", err)
	}
}

// A controller that has run and returned leaves no goroutine of its own
// behind: its event broadcaster stops with Run. A process that builds a
// controller per leadership term (or a test harness, one per restart)
// would otherwise keep one more broadcaster each time.
func TestRunLeavesNoGoroutinesBehind(t *testing.T) {
	runOnce := func() {
		client := fake.NewClientset()
		c := newTestController(t, client, &groupsProvider{groups: []string{"ours"}}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	}
	runOnce() // package-level goroutines (klog, watch managers) start once
	before := goruntime.NumGoroutine()
	const runs = 20
	for range runs {
		runOnce()
	}
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine()-before >= runs/2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if grew := goruntime.NumGoroutine() - before; grew >= runs/2 {
		t.Errorf("%d controllers run and stopped left %d more goroutines", runs, grew)
	}
}
