// Package dst is a deterministic simulation of the live autoscaler: the
// unmodified pkg/controller shell runs against a modelled API server
// (client-go's fake clientset with reactors), a modelled cloud, a
// scheduler and kubelets, under one virtual clock. A seed draws a schedule
// of steps (loop ticks, bindings, registrations, user changes, faults,
// crashes, a second replica taking over); after each step the harness waits
// until the controller's goroutines are idle and checks the invariants
// (invariants.go). A failing schedule is shrunk (shrink.go) and printed as
// a Go test that replays it.
package dst

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	podsResource   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesResource  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	rsResource     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	pdbsResource   = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	eventsResource = "events"
)

// World is the API server model: one object store (a fake clientset's
// tracker) that every autoscaler instance reaches through a client of its
// own, so that each call is known by its caller and can be refused,
// failed or recorded. Evictions follow the API server's rules: a
// PodDisruptionBudget that allows no disruption refuses them (429); a pod
// with a grace period terminates, one without goes at once; a pod of a
// ReplicaSet is recreated, pending.
type World struct {
	store *fake.Clientset
	clock *simClock
	hist  *History
	// faults are the armed API faults (faults.go).
	faults *faultBook
	// gates hold watch events back (watch.go).
	gates *gates

	mu sync.Mutex
	// instances are the autoscaler processes by name: whether each may
	// still call (a killed process makes no calls) and whether it leads.
	instances map[string]*instanceState
	// step is the schedule step being run, for the history.
	step int
	// staleWaiting counts the pods waiting when the pod watch was last
	// held: a cache that lags still shows them waiting.
	staleWaiting int
	// crashArmed kills the next instance whose write leaves a node tainted
	// ToBeDeleted (StepKillAfterTaint); crashed names the one killed, until
	// the harness restarts it.
	// spread places a pod on the node with the most free CPU
	// (WorldOptions.Spread).
	spread     bool
	crashArmed bool
	crashed    string
	// crashGate holds the write a crash came at until the harness kills
	// its instance.
	crashGate chan struct{}
	// takeoverArmed marks for deposition the next instance that reads a
	// terminating pod by name (a drain waiting for the pods it evicted:
	// StepTakeoverWhileDraining); waiting names it, until the harness
	// hands the Lease over.
	takeoverArmed bool
	waiting       string
	// taints are the ToBeDeleted taints the instances wrote: node -> the
	// taint's value and its writer.
	taints map[string]taintWrite
}

type taintWrite struct{ value, by string }

type instanceState struct {
	killed  bool
	deposed bool
}

func newWorld(clk *simClock, hist *History) *World {
	w := &World{store: fake.NewSimpleClientset(), clock: clk, hist: hist, faults: &faultBook{clock: clk}, gates: newGates(),
		instances: map[string]*instanceState{}, taints: map[string]taintWrite{}}
	w.store.PrependReactor("create", "pods", w.evict)
	return w
}

// client is instance id's connection to the API server.
func (w *World) client(id string) *fake.Clientset {
	w.mu.Lock()
	w.instances[id] = &instanceState{}
	w.mu.Unlock()
	cs := fake.NewClientset()
	cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := w.serve(id, a)
		return true, obj, err
	})
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if w.refused(id) {
			return true, nil, fmt.Errorf("instance %s was killed", id)
		}
		wi, err := w.store.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		return true, newGatedWatch(wi, a.GetResource().Resource, w.gates), nil
	})
	return cs
}

func (w *World) refused(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.instances[id].killed
}

// serve answers one call of instance id.
func (w *World) serve(id string, a k8stesting.Action) (runtime.Object, error) {
	res := a.GetResource().Resource
	if res == eventsResource {
		// Events are observations: kept out of the store and the faults.
		if c, ok := a.(k8stesting.CreateAction); ok {
			return c.GetObject(), nil
		}
		return &v1.Event{}, nil
	}
	w.mu.Lock()
	st := w.instances[id]
	killed, deposed, step := st.killed, st.deposed, w.step
	w.mu.Unlock()
	if killed {
		return nil, fmt.Errorf("instance %s was killed", id)
	}
	verb := a.GetVerb()
	write := verb == "create" || verb == "update" || verb == "patch" || verb == "delete" || verb == "delete-collection"
	if !write {
		obj, err := w.store.Invokes(a, nil)
		if p, ok := obj.(*v1.Pod); ok && err == nil && verb == "get" && p.DeletionTimestamp != nil && !deposed {
			w.drainWaits(id)
		}
		return obj, err
	}
	if deposed {
		// The fake clientset drops the caller's context: a deposed
		// replica's writes are refused as its cancelled leader context
		// would refuse them (cloud calls, which see the context, are
		// checked for real: cloud.go).
		return nil, context.Canceled
	}
	name := actionName(a)
	key := res
	if sub := a.GetSubresource(); sub != "" {
		key += "/" + sub
	}
	ev := Event{Step: step, At: w.clock.Now(), Instance: id, Kind: EventAPIWrite, Verb: verb, Resource: key,
		Object: name, Deposed: deposed}
	if res == "pods" && verb == "delete" {
		ev.Kind = EventPodDeletedDirectly
	}
	f := w.faults.take(key, name, true)
	if f != nil && f.Kind != FaultLostReply {
		ev.Result = f.Kind.String()
		w.hist.add(ev)
		return nil, f.apiError(key, name)
	}
	obj, err := w.store.Invokes(a, nil)
	ev.Result = resultOf(err)
	if f != nil {
		ev.Result = "applied, reply lost"
	}
	w.hist.add(ev)
	if err == nil {
		w.noteTaint(id, obj)
		if w.crashAfterTaint(id, obj) {
			return nil, fmt.Errorf("instance %s was killed", id)
		}
	}
	if f != nil {
		return nil, f.apiError(key, name)
	}
	return obj, err
}

func actionName(a k8stesting.Action) string {
	switch a := a.(type) {
	case k8stesting.CreateAction: // an UpdateAction too: the same methods
		if m, ok := a.GetObject().(metav1.Object); ok {
			return m.GetName()
		}
	case k8stesting.DeleteAction:
		return a.GetName()
	case k8stesting.PatchAction:
		return a.GetName()
	}
	return ""
}

func resultOf(err error) string {
	if err == nil {
		return "ok"
	}
	return string(apierrors.ReasonForError(err))
}

// evict is the Eviction subresource, on the store (so every instance's
// call and the harness's own go through the same rules).
func (w *World) evict(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	name := actionName(a)
	ns := a.GetNamespace()
	obj, err := w.store.Tracker().Get(podsResource, ns, name)
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		return true, &policyv1.Eviction{}, nil
	}
	if pdb := w.blockingBudget(pod); pdb != "" {
		return true, nil, apierrors.NewTooManyRequests(
			fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget %s", pdb), 10)
	}
	w.hist.add(Event{Step: w.currentStep(), At: w.clock.Now(), Kind: EventPodEvicted, Object: podKey(pod),
		Pods: []PodFact{factOf(pod)}})
	if grace := podGrace(pod); grace > 0 {
		now := metav1.NewTime(w.clock.Now())
		pod.DeletionTimestamp = &now
		pod.DeletionGracePeriodSeconds = &grace
		if err := w.store.Tracker().Update(podsResource, pod, ns); err != nil {
			return true, nil, err
		}
	} else if err := w.store.Tracker().Delete(podsResource, ns, name); err != nil {
		return true, nil, err
	}
	w.replace(pod)
	return true, &policyv1.Eviction{}, nil
}

func (w *World) deposed(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.instances[id].deposed
}

func (w *World) setStep(i int) {
	w.mu.Lock()
	w.step = i
	w.mu.Unlock()
}

func (w *World) kill(id string) {
	w.mu.Lock()
	w.instances[id].killed = true
	if w.crashGate != nil {
		close(w.crashGate)
		w.crashGate = nil
	}
	w.mu.Unlock()
}

func (w *World) depose(id string) {
	w.mu.Lock()
	w.instances[id].deposed = true
	w.mu.Unlock()
}

// holdPods notes what a cache that stops seeing pod events keeps showing
// (called as the pod watch is held, and as a process starts during the
// hold: its list is the last view it gets).
func (w *World) holdPods() {
	n := len(w.unboundPods())
	w.mu.Lock()
	if shut, _ := w.gates.state("pods"); !shut {
		w.staleWaiting = 0
	}
	w.staleWaiting = max(w.staleWaiting, n)
	w.mu.Unlock()
}

// waitingAsSeen is the number of waiting pods a scale-up of group g may
// answer: those waiting now that fit its nodes, or, while the pod watch is
// held, those the lagging cache still shows, whichever is more. Ordering for pods the cache has not
// yet seen leave is the in-flight latitude every autoscaler has.
func (w *World) waitingAsSeen(g GroupSpec) int {
	n := 0
	for _, p := range w.unboundPods() {
		if fitsGroup(p, g) {
			n++
		}
	}
	if shut, _ := w.gates.state("pods"); shut {
		w.mu.Lock()
		n = max(n, w.staleWaiting)
		w.mu.Unlock()
	}
	return n
}

func (w *World) currentStep() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.step
}

// blockingBudget names the budget that allows no more disruption of pod's
// group, "" when none does. Healthy pods are the bound, running,
// non-terminating ones that match.
func (w *World) blockingBudget(pod *v1.Pod) string {
	for _, pdb := range w.pdbs(pod.Namespace) {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labelsOf(pod)) {
			continue
		}
		healthy := 0
		for _, p := range w.pods() {
			if p.Namespace == pod.Namespace && sel.Matches(labelsOf(p)) && p.Spec.NodeName != "" &&
				p.DeletionTimestamp == nil && p.Status.Phase == v1.PodRunning {
				healthy++
			}
		}
		if healthy-int(pdb.Spec.MinAvailable.IntValue()) <= 0 {
			return pdb.Namespace + "/" + pdb.Name
		}
	}
	return ""
}

// replace recreates an evicted pod of a ReplicaSet, pending, as the
// ReplicaSet controller does.
func (w *World) replace(pod *v1.Pod) {
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	// Named after the pod it replaces, so that the name does not depend
	// on the order in which concurrent drains evict.
	p := freshPod(pod, pod.Name+"r")
	_ = w.store.Tracker().Add(p)
}

// freshPod is a new pending pod shaped like tmpl.
func freshPod(tmpl *v1.Pod, name string) *v1.Pod {
	p := tmpl.DeepCopy()
	p.Name, p.UID = name, types.UID("uid-"+name)
	p.ResourceVersion = ""
	p.Spec.NodeName = ""
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = nil, nil
	p.Status = v1.PodStatus{Phase: v1.PodPending}
	return p
}

func podGrace(p *v1.Pod) int64 {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return 0
	}
	return *p.Spec.TerminationGracePeriodSeconds
}

func labelsOf(p *v1.Pod) labels.Set { return labels.Set(p.Labels) }

// pods lists the store's pods, sorted by namespace and name.
func (w *World) pods() []*v1.Pod {
	obj, err := w.store.Tracker().List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		panic(err)
	}
	l := obj.(*v1.PodList)
	out := make([]*v1.Pod, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	sort.Slice(out, func(i, j int) bool { return podKey(out[i]) < podKey(out[j]) })
	return out
}

// nodes lists the store's nodes, sorted by name.
func (w *World) nodes() []*v1.Node {
	obj, err := w.store.Tracker().List(nodesResource, v1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		panic(err)
	}
	l := obj.(*v1.NodeList)
	out := make([]*v1.Node, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (w *World) pdbs(ns string) []*policyv1.PodDisruptionBudget {
	obj, err := w.store.Tracker().List(pdbsResource, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), ns)
	if err != nil {
		panic(err)
	}
	l := obj.(*policyv1.PodDisruptionBudgetList)
	out := make([]*policyv1.PodDisruptionBudget, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// podsOn are the pods bound to node.
func (w *World) podsOn(node string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range w.pods() {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
