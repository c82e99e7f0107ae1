package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// replicated gives p a ReplicaSet, so that the drain rules let it move.
func replicated(p *v1.Pod) *v1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid",
		Controller: ptr.To(true)}}
	return p
}

// evictionsDelete makes evictions delete the pod, as the API server does
// when no budget refuses; then, when set, runs after.
func evictionsDelete(c *fake.Clientset, after func(name string)) {
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		if err := c.Tracker().Delete(podsResource, a.GetNamespace(), name); err != nil {
			return true, nil, err
		}
		if after != nil {
			after(name)
		}
		return true, nil, nil
	})
}

func testActuator(c *fake.Clientset, cp *groupsProvider, clk *clocktesting.FakeClock) *liveActuator {
	return &liveActuator{client: c, cp: cp, clock: clk, log: quiet(), metrics: newMetrics(), outcomes: actuation.NewQueue(),
		events:             &eventSink{recorder: record.NewFakeRecorder(100), limiter: newEventLimiter(time.Minute), clock: clk},
		maxPodEvictionTime: time.Minute, maxNodeDeletionTime: 5 * time.Minute, drainOptions: drain.DefaultOptions(),
		statusNamespace: "kube-system", statusName: "cluster-autoscaler-status"}
}

// outcomeOf is the one outcome queued, as text.
func outcomeOf(t *testing.T, q *actuation.Queue) string {
	t.Helper()
	out := q.Take()
	if len(out) != 1 {
		t.Fatalf("outcomes %#v, want one", out)
	}
	switch o := out[0].(type) {
	case autoscaler.RemovalDone:
		return "done " + o.Node
	case autoscaler.RemovalAborted:
		return "aborted " + o.Node + ": " + o.Reason
	case autoscaler.RemovalFailed:
		return "failed " + o.Node + ": " + o.Step + ": " + o.Error
	}
	t.Fatalf("unexpected outcome %#v", out[0])
	return ""
}

// drive steps clk whenever something waits on it, until done is closed;
// a removal that does not end within seconds of real time fails the test.
func drive(t *testing.T, clk *clocktesting.FakeClock, done <-chan struct{}, step time.Duration) {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		select {
		case <-done:
			return
		case <-limit:
			t.Fatal("the removal did not end")
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(step)
			}
		}
	}
}

func taintOf(t *testing.T, c *fake.Clientset, node string) (v1.Taint, bool) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range n.Spec.Taints {
		if tt.Key == disruption.TaintToBeDeleted {
			return tt, true
		}
	}
	return v1.Taint{}, false
}

func podExists(c *fake.Clientset, name string) bool {
	_, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// A pod deleted just before the removal (a GPU job checkpointing in its
// 600 s grace period) is waited for: the node goes only once the pod is
// gone, not at once.
func TestRemovalWaitsForATerminatingPod(t *testing.T) {
	ckpt := replicated(builder.Pod("ckpt").OnNode("n").Build())
	ckpt.DeletionTimestamp = &metav1.Time{Time: t0}
	ckpt.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	client := fake.NewClientset(groupNode("n", "g"), ckpt)
	gets := make(chan struct{}, 100)
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case gets <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	cp := &groupsProvider{groups: []string{"g"}}
	clk := clocktesting.NewFakeClock(t0)
	act := testActuator(client, cp, clk)
	done := make(chan struct{})
	go func() {
		defer close(done)
		act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: 10 * time.Minute,
			Removals: []disruption.Removal{{Node: "n", Group: "g", Empty: true}}}, nil)
	}()
	select {
	case <-gets:
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the removal neither waited nor ended")
	}
	if len(cp.deletedNodes()) != 0 {
		t.Fatalf("node deleted while its pod was terminating: %v", cp.deletedNodes())
	}
	if err := client.Tracker().Delete(podsResource, "default", "ckpt"); err != nil {
		t.Fatal(err)
	}
	drive(t, clk, done, retryInterval)
	if got := outcomeOf(t, act.outcomes); got != "done n" {
		t.Errorf("outcome %q, want done n", got)
	}
}

// The wait for a terminating pod is bounded by the capped grace period:
// a pod that outlives it fails the removal, and the node is kept and
// untainted.
func TestRemovalWaitForATerminatingPodIsBounded(t *testing.T) {
	stuck := replicated(builder.Pod("stuck").OnNode("n").Build())
	stuck.DeletionTimestamp = &metav1.Time{Time: t0}
	stuck.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600)
	client := fake.NewClientset(groupNode("n", "g"), stuck)
	cp := &groupsProvider{groups: []string{"g"}}
	clk := clocktesting.NewFakeClock(t0)
	act := testActuator(client, cp, clk)
	done := make(chan struct{})
	go func() {
		defer close(done)
		act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
			Removals: []disruption.Removal{{Node: "n", Group: "g", Empty: true}}}, nil)
	}()
	drive(t, clk, done, retryInterval)
	if got := outcomeOf(t, act.outcomes); !strings.Contains(got, "failed n: draining: pod default/stuck still on node n") {
		t.Errorf("outcome %q, want a failed drain naming the pod", got)
	}
	if len(cp.deletedNodes()) != 0 {
		t.Error("node deleted")
	}
	if _, ok := taintOf(t, client, "n"); ok {
		t.Error("node still tainted")
	}
	if clk.Since(t0) > 2*time.Minute {
		t.Errorf("waited %s, want about --max-graceful-termination-sec plus the margin", clk.Since(t0))
	}
}

// A pod annotated after planning (safe-to-evict=false, on-completion; and
// do-not-disrupt for consolidation) is not evicted: the removal is called
// off and the node untainted.
func TestRemovalCalledOffWhenAPodMayNoLongerMove(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, consolidation, want string
	}{
		{"safe-to-evict false", drain.AnnotationSafeToEvict, "false", "", "annotated cluster-autoscaler.kubernetes.io/safe-to-evict=false"},
		{"on-completion", drain.AnnotationSafeToEvict, "on-completion", "", "must complete first"},
		{"do-not-disrupt, consolidation", drain.AnnotationDoNotDisrupt, "true", "delete: saves $1/h", "annotated gpuscale.dev/do-not-disrupt=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asPlanned := replicated(builder.Pod("job").OnNode("n").Build())
			now := replicated(builder.Pod("job").OnNode("n").Annotation(tc.key, tc.value).Build())
			client := fake.NewClientset(groupNode("n", "g"), now)
			evictionsDelete(client, nil)
			cp := &groupsProvider{groups: []string{"g"}}
			act := testActuator(client, cp, clocktesting.NewFakeClock(t0))
			act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
				Removals: []disruption.Removal{{Node: "n", Group: "g", Consolidation: tc.consolidation,
					Evict: []disruption.Move{{Pod: asPlanned, To: "other"}}}}}, nil)
			if got := outcomeOf(t, act.outcomes); !strings.HasPrefix(got, "aborted n: ") || !strings.Contains(got, tc.want) {
				t.Errorf("outcome %q, want aborted with %q", got, tc.want)
			}
			if !podExists(client, "job") || len(cp.deletedNodes()) != 0 {
				t.Error("the pod was evicted or its node deleted")
			}
			if _, ok := taintOf(t, client, "n"); ok {
				t.Error("node still tainted")
			}
		})
	}
}

// A pod bound by nodeName (which ignores taints) while the node drains
// does not go with the node: the last look before deletion calls it off.
func TestRemovalCalledOffWhenAPodIsBoundDuringTheDrain(t *testing.T) {
	planned := replicated(builder.Pod("planned").OnNode("n").Build())
	client := fake.NewClientset(groupNode("n", "g"), planned)
	evictionsDelete(client, func(string) {
		intruder := replicated(builder.Pod("intruder").OnNode("n").Build())
		if err := client.Tracker().Add(intruder); err != nil {
			t.Error(err)
		}
	})
	cp := &groupsProvider{groups: []string{"g"}}
	act := testActuator(client, cp, clocktesting.NewFakeClock(t0))
	act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
		Removals: []disruption.Removal{{Node: "n", Group: "g", Evict: []disruption.Move{{Pod: planned, To: "other"}}}}}, nil)
	if got := outcomeOf(t, act.outcomes); got != "aborted n: pod(s) default/intruder arrived during the drain" {
		t.Errorf("outcome %q", got)
	}
	if !podExists(client, "intruder") || len(cp.deletedNodes()) != 0 {
		t.Error("the node was deleted with a pod that was never evicted")
	}
	if _, ok := taintOf(t, client, "n"); ok {
		t.Error("node still tainted")
	}
}

// A failed drain takes off only the taint this instance wrote, and only
// while it leads: a new leader that re-tainted the node (another value)
// keeps its taint, whether the old one lost the Lease or not; a replica
// that lost the Lease writes nothing, and leaves its own taint to the next
// leader's start-up clean-up.
func TestFailedDrainLeavesAnotherLeadersTaint(t *testing.T) {
	for _, tc := range []struct {
		name               string
		loseLease, retaint bool
		evictErr           error
	}{
		{"lease lost during a PDB wait", true, true, apierrors.NewTooManyRequests("pdb", 1)},
		{"still leading, eviction error", false, true, apierrors.NewInternalError(context.DeadlineExceeded)},
		{"lease lost, no new taint yet", true, false, apierrors.NewTooManyRequests("pdb", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planned := replicated(builder.Pod("p").OnNode("n").Build())
			client := fake.NewClientset(groupNode("n", "g"), planned)
			lead, lose := context.WithCancel(context.Background())
			defer lose()
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				if tc.loseLease {
					lose()
				}
				if !tc.retaint {
					return true, nil, tc.evictErr
				}
				// Meanwhile the new leader tainted the same node.
				n, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n")
				if err != nil {
					return true, nil, err
				}
				node := n.(*v1.Node)
				node.Spec.Taints = []v1.Taint{{Key: disruption.TaintToBeDeleted, Value: "new-leader", Effect: v1.TaintEffectNoSchedule}}
				if err := client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, node, ""); err != nil {
					return true, nil, err
				}
				return true, nil, tc.evictErr
			})
			cp := &groupsProvider{groups: []string{"g"}}
			clk := clocktesting.NewFakeClock(t0)
			act := testActuator(client, cp, clk)
			done := make(chan struct{})
			go func() {
				defer close(done)
				act.removeBatch(lead, autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
					Removals: []disruption.Removal{{Node: "n", Group: "g", Evict: []disruption.Move{{Pod: planned, To: "other"}}}}}, nil)
			}()
			drive(t, clk, done, 10*time.Second)
			if got := outcomeOf(t, act.outcomes); !strings.HasPrefix(got, "failed n: draining") {
				t.Errorf("outcome %q, want a failed drain", got)
			}
			want := toBeDeletedTaint(t0).Value
			if tc.retaint {
				want = "new-leader"
			}
			if tt, ok := taintOf(t, client, "n"); !ok || tt.Value != want {
				t.Errorf("taint %+v (%v), want value %s", tt, ok, want)
			}
		})
	}
}

// stallingProvider's deletions hang until their context ends, as a call
// to a stalled cloud endpoint does.
type stallingProvider struct{ groupsProvider }

func (p *stallingProvider) DeleteNodes(ctx context.Context, _ string, _ []*v1.Node) error {
	<-ctx.Done()
	return ctx.Err()
}

// A drain is bounded: a cloud deletion that never returns fails the
// removal after drainTimeout (on the injected clock), and the node is
// untainted.
func TestDrainIsBoundedByItsTimeout(t *testing.T) {
	client := fake.NewClientset(groupNode("n", "g"))
	cp := &stallingProvider{groupsProvider{groups: []string{"g"}}}
	clk := clocktesting.NewFakeClock(t0)
	act := testActuator(client, &cp.groupsProvider, clk)
	act.cp = cp
	done := make(chan struct{})
	go func() {
		defer close(done)
		act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
			Removals: []disruption.Removal{{Node: "n", Group: "g", Empty: true}}}, nil)
	}()
	drive(t, clk, done, time.Minute)
	if got := outcomeOf(t, act.outcomes); !strings.Contains(got, "failed n: deleting the node: context canceled (timed out after") {
		t.Errorf("outcome %q, want a deletion that timed out", got)
	}
	if _, ok := taintOf(t, client, "n"); ok {
		t.Error("node still tainted")
	}
}

// The ToBeDeleted taint carries its owner, and taking it off takes the
// owner annotation with it.
func TestRemovalTaintNamesItsOwner(t *testing.T) {
	client := fake.NewClientset(groupNode("n", "g"))
	act := testActuator(client, &groupsProvider{groups: []string{"g"}}, clocktesting.NewFakeClock(t0))
	w := &removalWork{rm: disruption.Removal{Node: "n"}, taint: toBeDeletedTaint(t0)}
	if err := putTaint(context.Background(), client, "n", w.taint, act.owner(), true); err != nil {
		t.Fatal(err)
	}
	n, _ := client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
	if n.Annotations[AnnotationTaintOwner] != "kube-system/cluster-autoscaler-status" {
		t.Errorf("owner annotation %q", n.Annotations[AnnotationTaintOwner])
	}
	act.untaint(context.Background(), w)
	n, _ = client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
	if _, ok := n.Annotations[AnnotationTaintOwner]; ok || hasTaint(n, disruption.TaintToBeDeleted) {
		t.Errorf("after untaint: taints %v, annotations %v", n.Spec.Taints, n.Annotations)
	}
}

// checkPods sorts a node's current pods: what to evict, what to wait for,
// what goes with the node, and what calls the removal off.
func TestCheckPods(t *testing.T) {
	now := t0.Add(time.Hour)
	terminating := func(p *v1.Pod, ago time.Duration) *v1.Pod {
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(-ago)}
		return p
	}
	ds := builder.Pod("ds").OnNode("n").Build()
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "d", Controller: ptr.To(true)}}
	done := replicated(builder.Pod("done").OnNode("n").Build())
	done.Status.Phase = v1.PodSucceeded
	for _, tc := range []struct {
		name              string
		pod               *v1.Pod
		planned           bool
		evict, await, why string
	}{
		{"planned pod", replicated(builder.Pod("a").OnNode("n").Build()), true, "a", "", ""},
		{"terminating within its grace period", terminating(replicated(builder.Pod("a").OnNode("n").Build()), 10*time.Second), false, "", "a", ""},
		{"long terminating", terminating(replicated(builder.Pod("a").OnNode("n").Build()), time.Minute+time.Second), false, "", "", ""},
		{"unplanned DaemonSet pod", ds, false, "", "", ""},
		{"completed pod", done, false, "", "", ""},
		{"on another node", replicated(builder.Pod("a").OnNode("m").Build()), false, "", "", ""},
		{"unplanned pod", replicated(builder.Pod("a").OnNode("n").Build()), false, "", "", "pod(s) default/a arrived after the plan"},
		{"planned, not replicated any more", builder.Pod("a").OnNode("n").Build(), true, "", "", "pod default/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planned := map[types.UID]bool{}
			if tc.planned {
				planned[tc.pod.UID] = true
			}
			c := checkPods("n", []v1.Pod{*tc.pod}, planned, "after the plan", recheckRules(drain.Default(drain.DefaultOptions())),
				&drain.Context{Now: now})
			names := func(ps []*v1.Pod) string {
				var out []string
				for _, p := range ps {
					out = append(out, p.Name)
				}
				return strings.Join(out, ",")
			}
			if names(c.evict) != tc.evict || names(c.await) != tc.await || !strings.HasPrefix(c.why, tc.why) || (tc.why == "") != (c.why == "") {
				t.Errorf("evict %q await %q why %q; want %q %q %q", names(c.evict), names(c.await), c.why, tc.evict, tc.await, tc.why)
			}
		})
	}
}

// A node whose ToBeDeleted taint the planner judged stale (a deletion that
// died) is removed under a fresh taint of this instance's, which a failed
// removal would then take off.
func TestRemovalClaimsAStaleTaint(t *testing.T) {
	client := fake.NewClientset(groupNode("n", "g", v1.Taint{Key: disruption.TaintToBeDeleted, Value: "1", Effect: v1.TaintEffectNoSchedule}))
	cp := &groupsProvider{groups: []string{"g"}}
	act := testActuator(client, cp, clocktesting.NewFakeClock(t0))
	act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
		Removals: []disruption.Removal{{Node: "n", Group: "g", Empty: true}}}, nil)
	if got := outcomeOf(t, act.outcomes); got != "done n" {
		t.Errorf("outcome %q, want done n", got)
	}
	if tt, _ := taintOf(t, client, "n"); tt.Value != toBeDeletedTaint(t0).Value {
		t.Errorf("taint value %q, want this removal's %q", tt.Value, toBeDeletedTaint(t0).Value)
	}
}

// A taint that could not be taken off after a failed removal (the API
// server timing out, as when the taint's own reply was lost) is tried
// again on the next loop, as written: a node left ToBeDeleted would stay
// out of the scheduler's reach for as long as this instance leads. A node
// tainted again since (another value) keeps the newer taint.
func TestTaintLeftByAFailedRemovalIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retainted bool
	}{
		{"retried", false},
		{"a newer taint stays", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(groupNode("n", "g"), replicated(builder.Pod("p").OnNode("n").Build()))
			client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewServerTimeout(podsResource.GroupResource(), "list", 1)
			})
			updates, refuse := 0, true
			client.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				updates++
				if updates > 1 && refuse {
					return true, nil, apierrors.NewTimeoutError("the request timed out", 1)
				}
				return false, nil, nil
			})
			cp := &groupsProvider{groups: []string{"g"}}
			clk := clocktesting.NewFakeClock(t0)
			act := testActuator(client, cp, clk)
			act.removeBatch(context.Background(), autoscaler.RemoveNodes{MaxGracefulTermination: time.Minute,
				Removals: []disruption.Removal{{Node: "n", Group: "g", Empty: true}}}, nil)
			if got := outcomeOf(t, act.outcomes); !strings.HasPrefix(got, "failed n: reading the node's pods") {
				t.Fatalf("outcome %q, want the re-check failed", got)
			}
			if _, ok := taintOf(t, client, "n"); !ok {
				t.Fatal("the untaint was refused, yet the node has no taint")
			}
			refuse = false
			newer := toBeDeletedTaint(t0.Add(time.Hour))
			if tc.retainted {
				if err := putTaint(context.Background(), client, "n", newer, act.owner(), true); err != nil {
					t.Fatal(err)
				}
			}
			act.untaintOwed(context.Background())
			tt, ok := taintOf(t, client, "n")
			switch {
			case tc.retainted && tt != newer:
				t.Errorf("taint %v, want the newer %v kept", tt, newer)
			case !tc.retainted && ok:
				t.Errorf("taint %v left on the node after the loop's retry", tt)
			}
			if owed := act.owed.take(); len(owed) != 0 {
				t.Errorf("still owed after a successful retry: %v", owed)
			}
		})
	}
}
