package autoscaler

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

// SetRequestConditions writes conditions to a ProvisioningRequest's
// status, each replacing the condition of its type. When a ScaleUp of the
// same plan made for this request (ScaleUp.Requests) fails, the conditions
// of OnScaleUpError replace those of their types, the cloud's error added
// to each message.
// What was written comes back as a RequestConditionsSet.
type SetRequestConditions struct {
	Namespace, Name string
	UID             types.UID
	Conditions      []metav1.Condition
	OnScaleUpError  []metav1.Condition
}

// Key is the request's "namespace/name".
func (a SetRequestConditions) Key() string { return a.Namespace + "/" + a.Name }

func (SetRequestConditions) action() {}

// RequestConditionsSet says what a SetRequestConditions wrote (the
// conditions actually written, OnScaleUpError where a scale-up failed), or
// why it could not (Error; nothing was written then).
type RequestConditionsSet struct {
	Namespace, Name string
	UID             types.UID
	Conditions      []metav1.Condition
	Error           string
	At              time.Time
}

func (RequestConditionsSet) outcome() {}

// requestMemory is what the core keeps of a request between loops: the
// conditions it wrote that the input may not show yet (the informer lags
// the write), and the wait before the next attempt after one that found no
// capacity.
type requestMemory struct {
	written []metav1.Condition
	retry   time.Duration
}

// applyRequestOutcome remembers what a status write left.
func (a *Autoscaler) applyRequestOutcome(o RequestConditionsSet) {
	m := a.requestMemory(o.UID)
	if o.Error != "" {
		// Nothing was written: the next loop decides again from the input.
		m.written = nil
		return
	}
	m.written = provisioningrequest.SetConditions(m.written, o.Conditions...)
}

func (a *Autoscaler) requestMemory(uid types.UID) *requestMemory {
	if a.requests == nil {
		a.requests = map[types.UID]*requestMemory{}
	}
	m := a.requests[uid]
	if m == nil {
		m = &requestMemory{retry: a.opts.ProvisioningRequests.InitialBackoff}
		a.requests[uid] = m
	}
	return m
}

// requestView is a request as the core sees it: the input's object with
// the conditions the core wrote since laid over it, until the input shows
// them. Memory of requests no longer in the input is dropped.
func (a *Autoscaler) requestView(in []provisioningrequest.Request) []provisioningrequest.Request {
	seen := make(map[types.UID]bool, len(in))
	out := make([]provisioningrequest.Request, 0, len(in))
	for _, r := range in {
		seen[r.UID] = true
		m := a.requests[r.UID]
		if m == nil || len(m.written) == 0 {
			out = append(out, r)
			continue
		}
		obj := r.ProvisioningRequest.DeepCopy()
		kept := m.written[:0]
		for _, c := range m.written {
			if cur := obj.Condition(c.Type); cur != nil && !cur.LastTransitionTime.Before(&c.LastTransitionTime) {
				continue // the input caught up
			}
			obj.Status.Conditions = provisioningrequest.SetConditions(obj.Status.Conditions, c)
			kept = append(kept, c)
		}
		m.written = kept
		out = append(out, provisioningrequest.Request{ProvisioningRequest: obj, Templates: r.Templates})
	}
	for uid := range a.requests {
		if !seen[uid] {
			delete(a.requests, uid)
		}
	}
	return out
}
