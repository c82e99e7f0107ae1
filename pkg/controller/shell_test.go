package controller

import (
	"context"
	"io"
	"log/slog"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// groupsProvider maps nodes to groups by a label and records deletions.
type groupsProvider struct {
	groups  []string
	mu      sync.Mutex
	deleted []string
}

func (p *groupsProvider) Name() string                  { return "test" }
func (p *groupsProvider) Refresh(context.Context) error { return nil }
func (p *groupsProvider) NodeGroups() []snapshot.NodeGroup {
	var out []snapshot.NodeGroup
	for _, g := range p.groups {
		out = append(out, snapshot.NodeGroup{ID: g, MaxSize: 10})
	}
	return out
}
func (p *groupsProvider) NodeGroupForNode(n *v1.Node) (string, error)     { return n.Labels["group"], nil }
func (p *groupsProvider) IncreaseSize(context.Context, string, int) error { return nil }
func (p *groupsProvider) DecreaseTargetSize(context.Context, string, int) error {
	return nil
}
func (p *groupsProvider) DeleteNodes(_ context.Context, _ string, nodes []*v1.Node) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range nodes {
		p.deleted = append(p.deleted, n.Name)
	}
	return nil
}

func (p *groupsProvider) deletedNodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.deleted...)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func groupNode(name, group string, taints ...v1.Taint) *v1.Node {
	n := builder.Node(name).Label("group", group).Build()
	n.Spec.Taints = taints
	return n
}

func hasTaintNamed(t *testing.T, c *fake.Clientset, node, key string) bool {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hasTaint(n, key)
}

// A pod the scheduler put on a node after the plan was made calls the
// node's removal off: the node is untainted and kept, no pod is lost. The
// other node of the batch goes.
func TestRemovalCalledOffWhenAPodArrives(t *testing.T) {
	planned := replicated(builder.Pod("planned").CPU("1").OnNode("busy").Build())
	late := replicated(builder.Pod("late").CPU("1").OnNode("busy").Build())
	client := fake.NewClientset(groupNode("busy", "g"), groupNode("empty", "g"), planned, late)
	evictionsDelete(client, nil)
	cp := &groupsProvider{groups: []string{"g"}}
	clk := clocktesting.NewFakeClock(t0)
	act := testActuator(client, cp, clk)
	q := act.outcomes
	act.removeBatch(context.Background(), autoscaler.RemoveNodes{Removals: []disruption.Removal{
		{Node: "busy", Group: "g", Evict: []disruption.Move{{Pod: planned, To: "elsewhere"}}},
		{Node: "empty", Group: "g", Empty: true},
	}}, nil)
	var aborted, done []string
	for _, o := range q.Take() {
		switch o := o.(type) {
		case autoscaler.RemovalAborted:
			aborted = append(aborted, o.Node+": "+o.Reason)
		case autoscaler.RemovalDone:
			done = append(done, o.Node)
		default:
			t.Errorf("unexpected outcome %#v", o)
		}
	}
	if len(aborted) != 1 || !strings.Contains(aborted[0], "busy: pod(s) default/late arrived after the plan") {
		t.Errorf("aborted %v, want busy for default/late", aborted)
	}
	if len(done) != 1 || done[0] != "empty" || len(cp.deleted) != 1 || cp.deleted[0] != "empty" {
		t.Errorf("done %v, deleted %v; want only empty", done, cp.deleted)
	}
	if hasTaintNamed(t, client, "busy", disruption.TaintToBeDeleted) {
		t.Error("the called-off node is still tainted")
	}
	for _, name := range []string{"planned", "late"} {
		if _, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s was evicted from a node that stays: %v", name, err)
		}
	}
}

// At start-up only this instance's nodes lose the taints a crashed run
// left: another shard may be draining the rest.
func TestStaleTaintsCleanedOnOwnGroupsOnly(t *testing.T) {
	tb := v1.Taint{Key: disruption.TaintToBeDeleted, Value: "1", Effect: v1.TaintEffectNoSchedule}
	client := fake.NewClientset(groupNode("mine", "ours", tb), groupNode("theirs", "other-shard", tb), groupNode("loose", "", tb))
	o := DefaultOptions()
	o.Address, o.LeaderElection.Enabled, o.Logger = "", false, quiet()
	c, err := New(client, &groupsProvider{groups: []string{"ours"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.cleanStaleTaints(context.Background())
	if err != nil || r.Cleaned != 1 || len(r.Failed) != 0 {
		t.Fatalf("cleaned %+v (%v), want 1", r, err)
	}
	if hasTaintNamed(t, client, "mine", tb.Key) || !hasTaintNamed(t, client, "theirs", tb.Key) || !hasTaintNamed(t, client, "loose", tb.Key) {
		t.Error("only the node of this instance's group may be cleaned")
	}
}

// /health-check follows --max-startup-time, --max-inactivity and
// --max-failing-time; a replica that does not lead stays healthy.
func TestLiveness(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	l := &liveness{limits: DefaultLiveness(), clock: clk}
	at := func(d time.Duration) { clk.SetTime(t0.Add(d)) }
	check := func(when string, healthy bool) {
		t.Helper()
		if err := l.check(); (err == nil) != healthy {
			t.Errorf("%s: check %v, want healthy %v", when, err, healthy)
		}
	}
	at(time.Hour)
	check("waiting for the lease", true)
	l.startLeading()
	at(time.Hour + 19*time.Minute)
	check("leading, no loop yet, within the start-up time", true)
	at(time.Hour + 21*time.Minute)
	check("no loop succeeded past --max-startup-time", false)
	l.loopStarted(clk.Now())
	l.loopSucceeded(clk.Now())
	check("after a success", true)
	for m := 22; m <= 37; m++ { // every loop fails
		at(time.Hour + time.Duration(m)*time.Minute)
		l.loopStarted(clk.Now())
	}
	check("failing for 16 minutes", false)
	l.loopSucceeded(clk.Now())
	at(time.Hour + 48*time.Minute)
	check("no loop started for 11 minutes", false)
	l.stopLeading()
	check("lost the lease", true)
}

// Watch errors are logged at once, then at most once per interval per
// resource.
func TestWatchErrorsAreLogged(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	clk := clocktesting.NewFakeClock(t0)
	w := newWatchReporter(log, clk, newMetrics(), 30*time.Second)
	err := io.ErrUnexpectedEOF
	w.report("pods", err)
	w.report("pods", err)
	w.report("nodes", err)
	clk.Step(31 * time.Second)
	w.report("pods", err)
	if n := strings.Count(buf.String(), "cannot list or watch the API server"); n != 3 {
		t.Errorf("logged %d times, want 3 (pods, nodes, pods again after the interval):\n%s", n, buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Caches that never sync (an API server out of reach) end the wait with
// an error naming them and the last error seen, after the timeout.
func TestCacheSyncTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	w := newWatchReporter(quiet(), clk, newMetrics(), 30*time.Second)
	w.report("nodes", io.ErrUnexpectedEOF)
	l := newListers(informers.NewSharedInformerFactory(fake.NewClientset(), 0), false) // never started
	done := make(chan error, 1)
	go func() { done <- w.waitForSync(context.Background(), l, time.Minute) }()
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "did not sync within 1m0s (nodes, pods") ||
				!strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
				t.Fatalf("err = %v", err)
			}
			return
		default:
			if clk.HasWaiters() {
				clk.Step(time.Second)
			}
			goruntime.Gosched()
		}
	}
}
