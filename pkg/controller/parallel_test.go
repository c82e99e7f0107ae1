package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// gate lets calls through limit at a time, and reports the most it saw
// at once. Each call waits until limit calls are in (or the last few,
// when fewer are left), so a run that goes one at a time cannot pass.
type gate struct {
	mu             sync.Mutex
	cond           *sync.Cond
	in, most, left int
	limit          int
}

func newGate(limit, total int) *gate {
	g := &gate{limit: limit, left: total}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) pass(t *testing.T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in++
	g.most = max(g.most, g.in)
	g.cond.Broadcast()
	deadline := time.Now().Add(5 * time.Second)
	for g.in < min(g.limit, g.left) {
		if time.Now().After(deadline) {
			t.Errorf("%d call(s) at once, want %d: the calls ran one after another", g.in, min(g.limit, g.left))
			break
		}
		g.mu.Unlock()
		time.Sleep(time.Millisecond)
		g.mu.Lock()
	}
	g.in--
	g.left--
}

// forEach runs up to its limit at once, never more, and every item once.
func TestForEachIsBoundedAndParallel(t *testing.T) {
	for _, tc := range []struct{ n, limit int }{{25, 4}, {3, 10}, {5, 1}} {
		t.Run(fmt.Sprintf("%d items, limit %d", tc.n, tc.limit), func(t *testing.T) {
			g := newGate(tc.limit, tc.n)
			seen := make([]int, tc.n)
			forEach(tc.n, tc.limit, func(i int) {
				g.pass(t)
				seen[i]++
			})
			if want := min(tc.limit, tc.n); g.most != want {
				t.Errorf("at most %d at once, want %d", g.most, want)
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("item %d ran %d times", i, c)
				}
			}
		})
	}
}

// perNode names each failed node, in the nodes' order whatever order
// the calls ended in.
func TestPerNodeErrorsInTheNodesOrder(t *testing.T) {
	err := perNode([]string{"a", "b", "c", "d"}, 4, func(n string) error {
		if n == "a" {
			time.Sleep(10 * time.Millisecond)
		}
		if n == "a" || n == "c" {
			return errors.New("refused")
		}
		return nil
	})
	if err == nil || err.Error() != "node a: refused\nnode c: refused" {
		t.Errorf("error %v, want nodes a and c in order", err)
	}
	if err := perNode([]string{"a"}, 4, func(string) error { return nil }); err != nil {
		t.Errorf("error %v, want none", err)
	}
}

// nodeServer serves the API calls of a taint and a removal's re-check
// over HTTP (the fake clientset runs one call at a time): nodes by name,
// node updates through pass, and an empty pod list, each after delay. The
// client it returns has the rate qps and burst (qps < 0: no limit).
func nodeServer(t testing.TB, names []string, delay time.Duration, qps float32, burst int, pass func()) kubernetes.Interface {
	var mu sync.Mutex
	nodes := map[string]*v1.Node{}
	for _, n := range names {
		nodes[n] = groupNode(n, "g")
		nodes[n].APIVersion, nodes[n].Kind = "v1", "Node"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		name := strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/")
		switch {
		case r.URL.Path == "/api/v1/pods" && r.Method == http.MethodGet:
			_ = json.NewEncoder(w).Encode(&v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}})
		case name != r.URL.Path && r.Method == http.MethodGet:
			mu.Lock()
			n, ok := nodes[name]
			mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
					Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
				return
			}
			_ = json.NewEncoder(w).Encode(n)
		case name != r.URL.Path && r.Method == http.MethodPut:
			pass()
			n := &v1.Node{}
			if err := json.NewDecoder(r.Body).Decode(n); err != nil {
				t.Error(err)
			}
			n.APIVersion, n.Kind = "v1", "Node"
			mu.Lock()
			nodes[name] = n
			mu.Unlock()
			_ = json.NewEncoder(w).Encode(n)
		default:
			t.Errorf("unexpected call %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: qps, Burst: burst,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The actions of a loop that touch many nodes make their API calls up to
// the client's burst at once: soft taints, and a removal batch's taints.
func TestManyNodesAreTaintedAtOnce(t *testing.T) {
	const nodes, limit = 12, 4
	var names []string
	for i := range nodes {
		names = append(names, fmt.Sprintf("n%02d", i))
	}
	for _, tc := range []struct {
		name string
		act  func(*liveActuator)
		key  string
	}{
		{"soft taint", func(a *liveActuator) {
			if err := a.SoftTaint(context.Background(), autoscaler.SoftTaint{Nodes: names}); err != nil {
				t.Error(err)
			}
		}, disruption.TaintDeletionCandidate},
		{"removal batch", func(a *liveActuator) {
			var rms []disruption.Removal
			for _, n := range names {
				rms = append(rms, disruption.Removal{Node: n, Group: "g", Empty: true})
			}
			a.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute, Removals: rms}, nil)
		}, disruption.TaintToBeDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(limit, nodes)
			client := nodeServer(t, names, 0, -1, 0, func() { g.pass(t) })
			cp := &groupsProvider{groups: []string{"g"}}
			act := testActuator(fake.NewClientset(), cp, clocktesting.NewFakeClock(t0))
			act.client = client
			act.apiConcurrency = limit
			tc.act(act)
			if g.most != limit {
				t.Errorf("at most %d node update(s) at once, want %d", g.most, limit)
			}
			for _, n := range names {
				node, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
				if err != nil || !hasTaint(node, tc.key) {
					t.Errorf("node %s: no %s taint (%v)", n, tc.key, err)
				}
			}
		})
	}
}

// BenchmarkManyNodeTaints soft-taints 10 nodes (the default
// --max-bulk-soft-taint-count) and then removes them as one batch of
// empty nodes (70 API calls), against an API server answering each call
// in 5 ms: one call at a time and up to 100 at once, with the client at
// 50 qps and a burst of 100 (the rate then bounds a loop that repeats) and
// with no client limit.
func BenchmarkManyNodeTaints(b *testing.B) {
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("n%02d", i))
	}
	var rms []disruption.Removal
	for _, n := range names {
		rms = append(rms, disruption.Removal{Node: n, Group: "g", Empty: true})
	}
	for _, rate := range []struct {
		name  string
		qps   float32
		burst int
	}{{"50qps", 50, 100}, {"unlimited", -1, 0}} {
		for _, limit := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/at-once=%d", rate.name, limit), func(b *testing.B) {
				client := nodeServer(b, names, 5*time.Millisecond, rate.qps, rate.burst, func() {})
				cp := &groupsProvider{groups: []string{"g"}}
				act := testActuator(fake.NewClientset(), cp, clocktesting.NewFakeClock(t0))
				act.client, act.apiConcurrency = client, limit
				act.events.recorder = &record.FakeRecorder{} // keeps none
				for b.Loop() {
					if err := act.SoftTaint(context.Background(), autoscaler.SoftTaint{Nodes: names}); err != nil {
						b.Fatal(err)
					}
					act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute, Removals: rms}, nil)
					act.outcomes.Take()
				}
			})
		}
	}
}
