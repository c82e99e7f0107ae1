package gce

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// deadlock bounds the wait for a call that must not depend on a held
// request: the held request never ends on its own, so a call that waits
// on it never returns and this only turns a hang into a failure.
const deadlock = 30 * time.Second

// returns runs fn and fails the test if it does not return: it must not
// wait for anything the test holds. On failure it releases the held
// requests and lets fn end before the test does.
func (f *fakeGCE) returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(deadlock):
		t.Errorf("%s waited on the held request", what)
		f.releaseAll()
		<-done
		t.FailNow()
	}
}

// await receives a goroutine's result, failing the test on a hang.
func await(t *testing.T, what string, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(deadlock):
		t.Fatalf("%s did not return after its request was released", what)
		return nil
	}
}

func reach(t *testing.T, what string, reached <-chan struct{}) {
	t.Helper()
	select {
	case <-reached:
	case <-time.After(deadlock):
		t.Fatalf("%s never made the held request", what)
	}
}

// twoPools serves "pool" (3 running, 0..5) and "other" (1 running, 0..5).
func twoPools(t *testing.T) (*testEnv, map[string]*fakeMIG, *Provider) {
	t.Helper()
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
	migs := map[string]*fakeMIG{
		"pool":  e.f.addMIG(testProject, testZone, "pool", tmpl, 3),
		"other": e.f.addMIG(testProject, testZone, "other", tmpl, 1),
	}
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{
		{Max: 5, URL: migURL("pool")}, {Max: 5, URL: migURL("other")},
	}})
	refresh(t, p)
	e.f.resetCalls()
	return e, migs, p
}

func (f *fakeGCE) targetOf(m *fakeMIG) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(m.target)
}

func targets(p *Provider) map[string]int {
	out := map[string]int{}
	for _, g := range p.NodeGroups() {
		out[g.ID] = g.TargetSize
	}
	return out
}

func TestSlowDeletionBlocksNoOtherCall(t *testing.T) {
	e, migs, p := twoPools(t)
	reached, release := e.f.hold("wait")
	errc := make(chan error, 1)
	go func() {
		errc <- p.DeleteNodes(context.Background(), migURL("pool"), []*v1.Node{node("n0", providerID("pool-0"))})
	}()
	reach(t, "DeleteNodes", reached)

	// The deletion now waits on its operation, which the MIG has applied.
	e.f.returns(t, "NodeGroups", func() {
		if got := targets(p); got[migURL("pool")] != 3 || got[migURL("other")] != 1 {
			t.Errorf("targets while deleting: %v, want pool 3 (until the operation is done) and other 1", got)
		}
	})
	e.f.returns(t, "NodeGroupForNode", func() {
		if g, err := p.NodeGroupForNode(node("n1", providerID("pool-1"))); err != nil || g != migURL("pool") {
			t.Errorf("NodeGroupForNode: %q, %v", g, err)
		}
	})
	e.f.returns(t, "FailedCreations", func() { _ = p.FailedCreations() })
	e.f.mu.Lock()
	migs["other"].target = 2 // changed outside the provider: the refresh must show it
	e.f.mu.Unlock()
	e.clock.Step(DefaultRefreshInterval)
	e.f.returns(t, "Refresh", func() {
		if err := p.Refresh(context.Background()); err != nil {
			t.Errorf("Refresh: %v", err)
		}
	})
	// The listing already shows pool at 2, but the deletion has not
	// updated the cache yet; taking 2 now would count it twice later.
	if got := targets(p); got[migURL("pool")] != 3 || got[migURL("other")] != 2 {
		t.Errorf("targets after the refresh: %v, want pool 3 (kept) and other 2 (listed)", got)
	}
	e.f.returns(t, "IncreaseSize of another group", func() {
		if err := p.IncreaseSize(context.Background(), migURL("other"), 1); err != nil {
			t.Errorf("IncreaseSize: %v", err)
		}
	})
	if got := e.f.targetOf(migs["other"]); got != 3 {
		t.Errorf("other's server target %d, want 3", got)
	}

	release()
	if err := await(t, "DeleteNodes", errc); err != nil {
		t.Fatal(err)
	}
	if got := targets(p); got[migURL("pool")] != 2 || got[migURL("other")] != 3 {
		t.Errorf("targets after the deletion: %v, want pool 2 and other 3", got)
	}
	// The raced listing is not trusted for long: the next Refresh lists
	// again although the interval is not up, and agrees.
	e.f.resetCalls()
	refresh(t, p)
	if len(e.f.callsOf("list")) == 0 {
		t.Error("the Refresh after a raced listing made no call")
	}
	if got := targets(p); got[migURL("pool")] != 2 || got[migURL("other")] != 3 {
		t.Errorf("targets relisted: %v, want pool 2 and other 3", got)
	}
	e.f.resetCalls()
	refresh(t, p)
	if n := len(e.f.callsOf("")); n != 0 {
		t.Errorf("a clean listing is reused for the interval, got %d calls", n)
	}
}

func TestRefreshStartedBeforeAResizeKeepsTheNewTarget(t *testing.T) {
	e, migs, p := twoPools(t)
	// The refresh reads the MIG list (pool at 3) and then stops before
	// listing the instances, while the resize runs to completion.
	reached, release := e.f.hold("listManagedInstances")
	e.clock.Step(DefaultRefreshInterval)
	errc := make(chan error, 1)
	go func() { errc <- p.Refresh(context.Background()) }()
	reach(t, "Refresh", reached)

	e.f.returns(t, "NodeGroups during a refresh", func() {
		if got := targets(p); got[migURL("pool")] != 3 {
			t.Errorf("targets during the refresh: %v, want the previous listing", got)
		}
	})
	e.f.returns(t, "NodeGroupForNode during a refresh", func() {
		if g, _ := p.NodeGroupForNode(node("n1", providerID("pool-1"))); g != migURL("pool") {
			t.Errorf("NodeGroupForNode during the refresh: %q", g)
		}
	})
	e.f.returns(t, "IncreaseSize during a refresh", func() {
		if err := p.IncreaseSize(context.Background(), migURL("pool"), 2); err != nil {
			t.Errorf("IncreaseSize: %v", err)
		}
	})
	if got := e.f.targetOf(migs["pool"]); got != 5 {
		t.Fatalf("server target %d, want 5", got)
	}

	release()
	if err := await(t, "Refresh", errc); err != nil {
		t.Fatal(err)
	}
	if got := targets(p)[migURL("pool")]; got != 5 {
		t.Errorf("target after a refresh that listed 3 before the resize: %d, want 5", got)
	}
	// With the target kept right, the group is full: one more is refused.
	if err := p.IncreaseSize(context.Background(), migURL("pool"), 1); err == nil || !strings.Contains(err.Error(), "above max 5") {
		t.Errorf("IncreaseSize past max: %v", err)
	}
	e.f.resetCalls()
	refresh(t, p)
	if len(e.f.callsOf("list")) == 0 || targets(p)[migURL("pool")] != 5 {
		t.Errorf("relisting: %d list calls, target %d; want a list and 5", len(e.f.callsOf("list")), targets(p)[migURL("pool")])
	}
}

func TestChangesOfOneGroupRunOneAtATime(t *testing.T) {
	e, migs, p := twoPools(t)
	reached, release := e.f.hold("wait")
	first := make(chan error, 1)
	go func() {
		first <- p.DeleteNodes(context.Background(), migURL("pool"), []*v1.Node{node("n0", providerID("pool-0"))})
	}()
	reach(t, "DeleteNodes", reached)

	// A second change of the group waits for the first: with its context
	// ended, it gives up there and makes no call.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	e.f.returns(t, "a queued DeleteNodes with an ended context", func() {
		err = p.DeleteNodes(ctx, migURL("pool"), []*v1.Node{node("n1", providerID("pool-1"))})
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the group's change under way") {
		t.Errorf("cancelled while queued: %v", err)
	}
	if n := len(e.f.callsOf("deleteInstances")); n != 1 {
		t.Errorf("%d deleteInstances calls, want only the first's", n)
	}

	// One queued behind it runs after it, from the size it left.
	third := make(chan error, 1)
	go func() { third <- p.IncreaseSize(context.Background(), migURL("pool"), 2) }()
	release()
	if err := await(t, "DeleteNodes", first); err != nil {
		t.Fatal(err)
	}
	if err := await(t, "IncreaseSize", third); err != nil {
		t.Fatal(err)
	}
	if cache, server := targets(p)[migURL("pool")], e.f.targetOf(migs["pool"]); cache != 4 || server != 4 {
		t.Errorf("target: cache %d, server %d; want 3 - 1 + 2 = 4 both", cache, server)
	}
}

func TestFailedChangeMakesTheNextRefreshReload(t *testing.T) {
	e, _, p := twoPools(t)
	e.f.opError = "QUOTA_EXCEEDED"
	if err := p.IncreaseSize(context.Background(), migURL("pool"), 1); err == nil {
		t.Fatal("IncreaseSize succeeded with a failing operation")
	}
	if got := targets(p)[migURL("pool")]; got != 3 {
		t.Errorf("cached target %d after a failed resize, want 3", got)
	}
	e.f.resetCalls()
	refresh(t, p) // the interval is not up
	if len(e.f.callsOf("list")) == 0 {
		t.Error("no reload after a failed change")
	}
	e.f.resetCalls()
	refresh(t, p)
	if n := len(e.f.callsOf("")); n != 0 {
		t.Errorf("reloaded again without cause: %d calls", n)
	}
}

func TestRefreshQueuedBehindAnotherGivesUpWithItsContext(t *testing.T) {
	e, _, p := twoPools(t)
	reached, release := e.f.hold("list")
	e.clock.Step(DefaultRefreshInterval)
	errc := make(chan error, 1)
	go func() { errc <- p.Refresh(context.Background()) }()
	reach(t, "Refresh", reached)
	// A second refresh waits for the first; with its context ended it
	// gives up there (a free lock would be taken, and the listing fail).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	e.f.returns(t, "a queued Refresh with an ended context", func() { err = p.Refresh(ctx) })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the refresh under way") {
		t.Errorf("queued refresh with an ended context: %v", err)
	}
	release()
	if err := await(t, "Refresh", errc); err != nil {
		t.Fatal(err)
	}
}
