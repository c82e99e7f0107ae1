package dst

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// The timed faults of the API server model: a crash as a taint lands
// (StepKillAfterTaint), a takeover as a drain waits (StepTakeoverWhileDraining),
// and the record of who wrote each ToBeDeleted taint.

// armCrash kills the instance whose next write leaves a node tainted
// ToBeDeleted, as the write lands; disarmCrash calls it off (the quiet
// tail).
func (w *World) armCrash() {
	w.mu.Lock()
	w.crashArmed = true
	w.mu.Unlock()
}

func (w *World) disarmCrash() {
	w.mu.Lock()
	w.crashArmed = false
	w.mu.Unlock()
}

// crashAfterTaint, when a crash is armed and instance id's write left
// obj, a node, tainted ToBeDeleted, holds the write's reply until the
// harness kills the instance, and reports true: the process dies between
// the taint and the drain, and makes no call after. The kill waits for the
// other goroutines to settle, so that what they did meanwhile does not
// depend on their order.
func (w *World) crashAfterTaint(id string, obj runtime.Object) bool {
	n, ok := obj.(*v1.Node)
	if !ok || !hasTaint(n, disruption.TaintToBeDeleted) {
		return false
	}
	w.mu.Lock()
	if !w.crashArmed {
		w.mu.Unlock()
		return false
	}
	w.crashArmed = false
	w.crashed = id
	gate := make(chan struct{})
	w.crashGate = gate
	w.mu.Unlock()
	<-gate
	return true
}

// takeCrashed names the instance a crash killed since the last call, ""
// when none.
func (w *World) takeCrashed() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.crashed
	w.crashed = ""
	return id
}

func hasTaint(n *v1.Node, key string) bool {
	_, ok := taintValue(n, key)
	return ok
}

func taintValue(n *v1.Node, key string) (string, bool) {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return t.Value, true
		}
	}
	return "", false
}

// noteTaint records instance id as the writer of the ToBeDeleted taint
// that its write left on obj, a node, when the taint is new or changed.
func (w *World) noteTaint(id string, obj runtime.Object) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	v, ok := taintValue(n, disruption.TaintToBeDeleted)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.taints[n.Name].value != v {
		w.taints[n.Name] = taintWrite{value: v, by: id}
	}
}

// taintWriter names the instance that wrote the ToBeDeleted taint of
// value v on node, "" when unknown.
func (w *World) taintWriter(node, v string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.taints[node]; t.value == v {
		return t.by
	}
	return ""
}

// armTakeover marks for deposition the instance whose next read of a
// terminating pod by name is a drain waiting for the pods it evicted;
// disarmTakeover calls it off.
func (w *World) armTakeover() {
	w.mu.Lock()
	w.takeoverArmed = true
	w.mu.Unlock()
}

func (w *World) disarmTakeover() {
	w.mu.Lock()
	w.takeoverArmed = false
	w.mu.Unlock()
}

// drainWaits notes, when a takeover is armed, that instance id has a
// drain waiting for a pod to terminate. The harness hands the Lease over
// once the goroutines settle, not here: concurrent drains of one batch
// are then where they would be in any interleaving.
func (w *World) drainWaits(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.takeoverArmed {
		w.takeoverArmed = false
		w.waiting = id
	}
}

// takeWaiting names the instance whose drain a takeover caught waiting
// since the last call, "" when none.
func (w *World) takeWaiting() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.waiting
	w.waiting = ""
	return id
}
