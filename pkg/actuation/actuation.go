// Package actuation carries a loop's plan out: one Actuator interface that
// the live controller implements with cloud calls, taints and evictions,
// and the simulator in memory, and Carry, which takes the plan's actions
// in order and turns what happened into the outcomes the next
// autoscaler.Step reads.
package actuation

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

// Actuator does what actions ask. The calls that finish at once return
// their error; RemoveNodes runs in the background (drains take minutes)
// and reports every removal's end to the Queue it was built with.
type Actuator interface {
	// DecreaseTarget lowers a group's target for nodes that never came.
	DecreaseTarget(ctx context.Context, a autoscaler.DecreaseTarget) error
	// DeleteInstances deletes instances that never registered.
	DeleteInstances(ctx context.Context, a autoscaler.DeleteInstances) error
	// ScaleUp raises a group's target.
	ScaleUp(ctx context.Context, a autoscaler.ScaleUp) error
	// SoftTaint and SoftUntaint put the PreferNoSchedule deletion-candidate
	// taint on nodes and take it off.
	SoftTaint(ctx context.Context, a autoscaler.SoftTaint) error
	SoftUntaint(ctx context.Context, a autoscaler.SoftUntaint) error
	// Cordon and Uncordon put the NoSchedule taint of a consolidation
	// replacement on nodes and take it off.
	Cordon(ctx context.Context, a autoscaler.Cordon) error
	Uncordon(ctx context.Context, a autoscaler.Uncordon) error
	// RemoveNodes starts removing a batch of nodes; each removal's
	// outcome (RemovalDone, RemovalFailed or RemovalAborted) goes to the
	// actuator's queue when it ends.
	RemoveNodes(ctx context.Context, a autoscaler.RemoveNodes)
	// SetRequestConditions writes conditions to a ProvisioningRequest's
	// status (Carry has already chosen between Conditions and
	// OnScaleUpError).
	SetRequestConditions(ctx context.Context, a autoscaler.SetRequestConditions) error
}

// Result is what carrying out one plan gave at once.
type Result struct {
	// Outcomes for the next Step.
	Outcomes []autoscaler.Outcome
	// Errors of actions whose failure the next loop sees by itself (a
	// target not lowered, a taint not set), for the shell to report. Each
	// names the action.
	Errors []error
}

// Carry does the actions in order. A scale-up's result becomes a
// ScaleUpResult dated by clk, the time its provisioning counts from. A
// ProvisioningRequest whose scale-up of this plan failed gets the
// conditions its SetRequestConditions gives for that case.
func Carry(ctx context.Context, act Actuator, clk clock.PassiveClock, actions []autoscaler.Action) Result {
	var r Result
	// scaleUpFailed holds, by request key, the error of a failed scale-up.
	scaleUpFailed := map[string]string{}
	fail := func(what string, err error) {
		if err != nil {
			r.Errors = append(r.Errors, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, a := range actions {
		switch a := a.(type) {
		case autoscaler.DecreaseTarget:
			fail(fmt.Sprintf("lowering the target of %s by %d", a.Group, a.Delta), act.DecreaseTarget(ctx, a))
		case autoscaler.DeleteInstances:
			fail(fmt.Sprintf("deleting %d unregistered instance(s) of %s", len(a.ProviderIDs), a.Group), act.DeleteInstances(ctx, a))
		case autoscaler.ScaleUp:
			at := clk.Now()
			res := autoscaler.ScaleUpResult{Group: a.Group, Delta: a.Delta, At: at, Requests: a.Requests, Queued: a.Queued != nil}
			if err := act.ScaleUp(ctx, a); err != nil {
				res.Error = err.Error()
				fail(fmt.Sprintf("scaling %s up by %d", a.Group, a.Delta), err)
				for _, k := range a.Requests {
					scaleUpFailed[k] = err.Error()
				}
			}
			r.Outcomes = append(r.Outcomes, res)
		case autoscaler.SoftTaint:
			fail(fmt.Sprintf("soft-tainting %d node(s)", len(a.Nodes)), act.SoftTaint(ctx, a))
		case autoscaler.SoftUntaint:
			fail(fmt.Sprintf("soft-untainting %d node(s)", len(a.Nodes)), act.SoftUntaint(ctx, a))
		case autoscaler.Cordon:
			fail(fmt.Sprintf("cordoning %d node(s) for a replacement", len(a.Nodes)), act.Cordon(ctx, a))
		case autoscaler.Uncordon:
			fail(fmt.Sprintf("uncordoning %d node(s)", len(a.Nodes)), act.Uncordon(ctx, a))
		case autoscaler.RemoveNodes:
			act.RemoveNodes(ctx, a)
		case autoscaler.SetRequestConditions:
			r.Outcomes = append(r.Outcomes, setRequestConditions(ctx, act, clk, a, scaleUpFailed, fail))
		default:
			fail("carrying out the plan", fmt.Errorf("unknown action %T", a))
		}
	}
	return r
}

// Queue collects outcomes that arrive between loops (removals that end in
// the background, failed creations a provider saw); safe for concurrent
// use.
type Queue struct {
	mu       sync.Mutex
	outcomes []autoscaler.Outcome
	notify   chan struct{}
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{notify: make(chan struct{}, 1)} }

// Add appends outcomes that arrived in the background and wakes a waiter
// of Ready, so the loop learns of them soon.
func (q *Queue) Add(o ...autoscaler.Outcome) {
	q.Hold(o...)
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// Hold appends outcomes for the next loop without waking it (the results
// of the loop's own calls).
func (q *Queue) Hold(o ...autoscaler.Outcome) {
	q.mu.Lock()
	q.outcomes = append(q.outcomes, o...)
	q.mu.Unlock()
}

// Take returns the outcomes queued so far and empties the queue.
func (q *Queue) Take() []autoscaler.Outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.outcomes
	q.outcomes = nil
	return out
}

// Ready is signalled after Add, so a loop can run soon after a removal
// ends.
func (q *Queue) Ready() <-chan struct{} { return q.notify }

// setRequestConditions writes a request's conditions, those for a failed
// scale-up when one of this plan failed, and says what was written.
func setRequestConditions(ctx context.Context, act Actuator, clk clock.PassiveClock, a autoscaler.SetRequestConditions,
	scaleUpFailed map[string]string, fail func(string, error)) autoscaler.RequestConditionsSet {
	if msg, failed := scaleUpFailed[a.Key()]; failed && len(a.OnScaleUpError) > 0 {
		alt := make([]metav1.Condition, len(a.OnScaleUpError))
		for i, c := range a.OnScaleUpError {
			c.Message += ": " + msg
			alt[i] = c
		}
		a.Conditions = provisioningrequest.SetConditions(a.Conditions, alt...)
	}
	a.OnScaleUpError = nil
	out := autoscaler.RequestConditionsSet{Namespace: a.Namespace, Name: a.Name, UID: a.UID, Conditions: a.Conditions, At: clk.Now()}
	if err := act.SetRequestConditions(ctx, a); err != nil {
		out.Error = err.Error()
		fail(fmt.Sprintf("setting the conditions of ProvisioningRequest %s", a.Key()), err)
	}
	return out
}
