package autoscaler

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// requestLoop is one loop's work on ProvisioningRequests: the gangs to
// try, the booked pods whose room is held, and the conditions to write.
type requestLoop struct {
	gangs   []scaleup.Gang
	booked  []*v1.Pod
	tried   map[string]*pr.ProvisioningRequest
	changes map[string]*requestChange
	// deadlines are the times a request's state changes by itself: a
	// retry, a booking's end, an expiry.
	deadlines []time.Time
}

// requestChange gathers the conditions one request gets this loop.
type requestChange struct {
	req           *pr.ProvisioningRequest
	conds, onFail []metav1.Condition
}

func (rl *requestLoop) set(r *pr.ProvisioningRequest, cs ...metav1.Condition) *requestChange {
	if rl.changes == nil {
		rl.changes = map[string]*requestChange{}
	}
	c := rl.changes[r.Key()]
	if c == nil {
		c = &requestChange{req: r}
		rl.changes[r.Key()] = c
	}
	c.conds = pr.SetConditions(c.conds, cs...)
	return c
}

// prepareRequests goes through the requests this autoscaler serves, oldest
// first: ends those whose booking ran out or was used up and those never
// provisioned in time, holds the room of the booked ones, and makes gangs
// of those due for an attempt (never tried, or retried after the backoff).
func (l *loop) prepareRequests() {
	o := l.opts.ProvisioningRequests
	if !o.Enabled || len(l.in.ProvisioningRequests) == 0 {
		return
	}
	view := l.requestView(l.in.ProvisioningRequests)
	sort.SliceStable(view, func(i, j int) bool {
		a, b := view[i], view[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Key() < b.Key()
	})
	rl := &l.req
	rl.tried = map[string]*pr.ProvisioningRequest{}
	now := l.in.Now
	stamp := metav1.NewTime(now.Truncate(time.Second))
	var consumed map[string]int
	for _, r := range view {
		if !o.Serves(r.ProvisioningRequest) || pr.Done(r.ProvisioningRequest) {
			continue
		}
		if consumed == nil && pr.Booked(r.ProvisioningRequest) {
			consumed = l.consumers()
		}
		if c, ok := o.Expiry(r.ProvisioningRequest, consumed[r.Key()], now); ok {
			c.LastTransitionTime = stamp
			rl.set(r.ProvisioningRequest, c)
			continue
		}
		if pr.Booked(r.ProvisioningRequest) {
			l.book(r, consumed[r.Key()], stamp)
			continue
		}
		rl.deadlines = append(rl.deadlines, r.CreationTimestamp.Add(o.ExpiryTime))
		if l.followQueued(r.ProvisioningRequest, stamp) {
			continue
		}
		m := l.requestMemory(r.UID)
		if !pr.Waiting(r.ProvisioningRequest) {
			// A waiting request its cloud request is missing for is asked
			// again at once: the cloud lost it, or never made it.
			if !pr.Due(r.ProvisioningRequest, m.retry, now) {
				rl.deadlines = append(rl.deadlines, pr.RetryAt(r.ProvisioningRequest, m.retry))
				continue
			}
			if r.Condition(pr.Provisioned) != nil {
				m.retry = min(2*m.retry, o.MaxBackoff)
			}
		}
		g, err := gangOf(r)
		if err != nil {
			rl.set(r.ProvisioningRequest, pr.NewCondition(r.ProvisioningRequest, pr.Failed, metav1.ConditionTrue,
				err.reason, err.Error(), stamp))
			continue
		}
		if !r.IsTrue(pr.Accepted) {
			rl.set(r.ProvisioningRequest, pr.NewCondition(r.ProvisioningRequest, pr.Accepted, metav1.ConditionTrue,
				pr.ReasonAccepted, pr.MsgAccepted, stamp))
		}
		rl.tried[r.Key()] = r.ProvisioningRequest
		rl.gangs = append(rl.gangs, g)
	}
}

// gangError is why a request cannot be tried, with the Failed reason.
type gangError struct {
	reason string
	err    error
}

func (e *gangError) Error() string { return e.err.Error() }

// gangOf is the gang that tries a request: its pods, and for the queued
// class the cloud request's name and run duration.
func gangOf(r pr.Request) (scaleup.Gang, *gangError) {
	g := scaleup.Gang{Key: r.Key(), CheckOnly: r.Spec.ProvisioningClassName == pr.ClassCheckCapacity}
	if pr.Queued(r.ProvisioningRequest) {
		d, err := pr.RunDuration(r.ProvisioningRequest)
		if err != nil {
			return g, &gangError{reason: pr.ReasonInvalidParameters, err: err}
		}
		g.Queued = &scaleup.QueuedScaleUp{Name: pr.QueuedName(r.ProvisioningRequest), RunDuration: d}
	}
	pods, err := pr.Pods(r.ProvisioningRequest, r.Templates)
	if err != nil {
		return g, &gangError{reason: pr.ReasonFailedToCreatePods, err: err}
	}
	g.Pods = pods
	return g, nil
}

// followQueued follows a queued request the cloud holds: provisioned or
// failed as the cloud's request says, left alone while the cloud waits for
// capacity. It reports whether r is settled for this loop; a waiting
// request whose cloud request is not listed is not, and is asked again.
func (l *loop) followQueued(r *pr.ProvisioningRequest, stamp metav1.Time) bool {
	if !pr.Waiting(r) {
		return false
	}
	name := pr.QueuedName(r)
	for _, g := range l.in.Snapshot.NodeGroups() {
		for _, q := range g.Queued {
			if q.Name != name {
				continue
			}
			switch q.State {
			case snapshot.QueuedProvisioned:
				l.req.set(r, pr.NewCondition(r, pr.Provisioned, metav1.ConditionTrue, pr.ReasonCapacityIsProvisioned,
					fmt.Sprintf("Queued capacity is provisioned: %d node(s) of %s (queued request %s)", q.Count, g.ID, q.Name), stamp))
			case snapshot.QueuedFailed:
				l.req.set(r, pr.NewCondition(r, pr.Failed, metav1.ConditionTrue, pr.ReasonQueuedRequestFailed,
					fmt.Sprintf("Queued request %s of %s failed: %s", q.Name, g.ID, q.Message), stamp))
			}
			return true
		}
	}
	return false
}

// book holds the room of a provisioned request's pods that are not yet
// running (the last ones of its pod sets go first as pods start).
func (l *loop) book(r pr.Request, consumed int, stamp metav1.Time) {
	p := r.Condition(pr.Provisioned)
	l.req.deadlines = append(l.req.deadlines, p.LastTransitionTime.Add(l.opts.ProvisioningRequests.BookingTime))
	pods, err := pr.Pods(r.ProvisioningRequest, r.Templates)
	if err != nil {
		l.req.set(r.ProvisioningRequest, pr.NewCondition(r.ProvisioningRequest, pr.Failed, metav1.ConditionTrue,
			"FailedToBookCapacity", "Couldn't create pods, err: "+err.Error(), stamp))
		return
	}
	if n := len(pods) - consumed; n > 0 {
		l.req.booked = append(l.req.booked, pods[:n]...)
	}
}

// consumers counts, by request key, the pods bound to nodes that consume
// a request.
func (l *loop) consumers() map[string]int {
	out := map[string]int{}
	for _, ni := range l.in.Snapshot.Nodes() {
		for _, pi := range ni.Pods {
			if name, ok := pr.ConsumerOf(pi.Pod); ok {
				out[pi.Pod.Namespace+"/"+name]++
			}
		}
	}
	return out
}

// requestResults turns what each gang got into its conditions. A gang
// that fits is provisioned at once; one that scales up is provisioned
// when its scale-up is accepted (the shell writes the failure otherwise);
// one with no room is tried again after the backoff, or fails when it
// asked not to be retried.
func (l *loop) requestResults() {
	rl := &l.req
	stamp := metav1.NewTime(l.in.Now.Truncate(time.Second))
	for _, g := range l.upPlan.Gangs {
		r := rl.tried[g.Key]
		if r == nil {
			continue
		}
		check := r.Spec.ProvisioningClassName == pr.ClassCheckCapacity
		cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
			return pr.NewCondition(r, typ, st, reason, msg, stamp)
		}
		switch g.Outcome {
		case scaleup.GangFits, scaleup.GangFitsUpcoming:
			reason, msg := pr.ReasonCapacityIsFound, pr.MsgCapacityIsFound
			if g.Outcome == scaleup.GangFitsUpcoming && !check {
				reason, msg = pr.ReasonCapacityIsProvisioned, pr.MsgCapacityIsProvisioned
			}
			rl.set(r, cond(pr.Provisioned, metav1.ConditionTrue, reason, msg))
			if check {
				rl.set(r, cond(pr.CapacityAvailable, metav1.ConditionTrue, reason, msg))
			}
		case scaleup.GangScaledUp:
			reason, msg, st := pr.ReasonCapacityIsProvisioned, pr.MsgCapacityIsProvisioned, metav1.ConditionTrue
			if pr.Queued(r) && len(g.ScaleUps) > 0 {
				su := g.ScaleUps[0]
				reason, msg, st = pr.ReasonCapacityIsQueued, fmt.Sprintf("Waiting for queued capacity: %d node(s) of %s asked for as queued request %s",
					su.Delta, su.Group, su.Queued.Name), metav1.ConditionFalse
			}
			c := rl.set(r, cond(pr.Provisioned, st, reason, msg))
			c.onFail = []metav1.Condition{cond(pr.Provisioned, metav1.ConditionFalse, pr.ReasonCapacityIsNotFound,
				pr.MsgCapacityIsNotFound+" The scale-up failed")}
		case scaleup.GangNoRoom:
			why := g.Message()
			if pr.NoRetry(r) {
				rl.set(r, cond(pr.Failed, metav1.ConditionTrue, pr.ReasonCapacityIsNotFound, pr.MsgCapacityNotFoundNoRetry+": "+why))
			} else {
				rl.set(r, cond(pr.Provisioned, metav1.ConditionFalse, pr.ReasonCapacityIsNotFound, pr.MsgCapacityIsNotFound+" "+why))
				rl.deadlines = append(rl.deadlines, stamp.Add(l.requestMemory(r.UID).retry))
			}
			if check {
				rl.set(r, cond(pr.CapacityAvailable, metav1.ConditionFalse, pr.ReasonCapacityIsNotFound, why))
			}
		}
	}
}

// requestActions are the status writes of this loop, by request key.
func (l *loop) requestActions() []Action {
	keys := make([]string, 0, len(l.req.changes))
	for k := range l.req.changes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Action, 0, len(keys))
	for _, k := range keys {
		c := l.req.changes[k]
		out = append(out, SetRequestConditions{Namespace: c.req.Namespace, Name: c.req.Name, UID: c.req.UID,
			Conditions: c.conds, OnScaleUpError: c.onFail})
	}
	return out
}
