package serving

import (
	"fmt"
	"math"
	"sort"
)

// Request is one inference request of a trace.
type Request struct {
	// At is its arrival, in seconds from the start of the run.
	At float64
	// InputTokens is the prompt; OutputTokens what it generates.
	InputTokens, OutputTokens int64
}

// Outcome is what became of one request. FirstToken and Done are -1 until
// they happen.
type Outcome struct {
	FirstToken, Done float64
	// Refused is set, with the reason, for a request that no replica can
	// ever hold: its prompt and output are more than the KV cache.
	Refused string
}

// TTFT is the time to first token, or +Inf for a request without one.
func (o Outcome) TTFT(r Request) float64 {
	if o.FirstToken < 0 {
		return math.Inf(1)
	}
	return o.FirstToken - r.At
}

// Fleet is the replicas of one served model and the router in front of
// them. Requests go, on arrival, to the ready replica with the fewest
// outstanding (the first added on a tie); with no replica ready they wait
// at the router, first come first served, for the next one.
//
// The caller moves time forward with Advance and changes the replicas
// with Add and Remove between calls; nothing else changes a Fleet.
type Fleet struct {
	profile  Profile
	requests []Request
	outcomes []Outcome
	next     int // the first request not arrived yet
	now      float64
	held     []flight // at the router: no replica was ready
	replicas []*replica
	gone     []*replica // released replicas, kept for the measures
}

// NewFleet serves requests (in time order; refused otherwise, naming the
// first out of order) with replicas of profile.
func NewFleet(p Profile, requests []Request) (*Fleet, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for i := range requests {
		q := requests[i]
		if q.InputTokens < 0 || q.OutputTokens < 0 || q.At < 0 || math.IsNaN(q.At) || math.IsInf(q.At, 0) {
			return nil, fmt.Errorf("request %d: at %g, %d input and %d output tokens: times and counts must be finite and not negative",
				i, q.At, q.InputTokens, q.OutputTokens)
		}
		if i > 0 && q.At < requests[i-1].At {
			return nil, fmt.Errorf("request %d: arrives at %gs, before request %d at %gs: requests must be in time order", i, q.At, i-1, requests[i-1].At)
		}
	}
	f := &Fleet{profile: p, requests: requests, outcomes: make([]Outcome, len(requests))}
	for i := range f.outcomes {
		f.outcomes[i] = Outcome{FirstToken: -1, Done: -1}
	}
	return f, nil
}

// Profile is the fleet's replica profile.
func (f *Fleet) Profile() Profile { return f.profile }

// Now is the time the fleet has been advanced to.
func (f *Fleet) Now() float64 { return f.now }

func (f *Fleet) firstToken(req int, at float64) { f.outcomes[req].FirstToken = at }
func (f *Fleet) finished(req int, at float64)   { f.outcomes[req].Done = at }

// Add starts a replica named name whose GPUs are taken now and which
// serves from readyAt (at least now). A name in use is refused.
func (f *Fleet) Add(name string, readyAt float64) error {
	for _, r := range f.replicas {
		if r.name == name {
			return fmt.Errorf("serving replica %q: already running", name)
		}
	}
	if readyAt < f.now || math.IsNaN(readyAt) {
		return fmt.Errorf("serving replica %q: ready at %gs, before now (%gs)", name, readyAt, f.now)
	}
	f.replicas = append(f.replicas, &replica{name: name, startedAt: f.now, readyAt: readyAt, releasedAt: -1, now: readyAt, idleSince: readyAt})
	if readyAt == f.now {
		f.dispatchHeld()
	}
	return nil
}

// Remove stops routing to the replica: the requests waiting in its queue go
// back to the router in arrival order, those admitted finish (a graceful
// drain), and its GPUs are released when it is empty. A replica not ready
// yet is released at once. An unknown name is refused.
func (f *Fleet) Remove(name string) error {
	for _, r := range f.replicas {
		if r.name != name || r.draining {
			continue
		}
		r.draining, r.removedAt = true, f.now
		f.held = mergeByArrival(f.held, r.queue)
		r.queue = nil
		f.releaseEmpty()
		f.dispatchHeld()
		return nil
	}
	return fmt.Errorf("serving replica %q: not running", name)
}

// Advance runs the fleet to time t: arrivals are routed, replicas become
// ready and serve, draining replicas that empty are released.
func (f *Fleet) Advance(t float64) {
	for f.now < t {
		step := t
		if f.next < len(f.requests) && f.requests[f.next].At < step {
			step = f.requests[f.next].At
		}
		for _, r := range f.replicas {
			if r.readyAt > f.now && r.readyAt < step {
				step = r.readyAt
			}
		}
		f.advanceReplicas(step)
		f.now = step
		f.dispatchHeld()
		for f.next < len(f.requests) && f.requests[f.next].At <= f.now {
			f.arrive(f.next)
			f.next++
		}
	}
}

func (f *Fleet) advanceReplicas(t float64) {
	for _, r := range f.replicas {
		if r.readyAt <= t {
			r.advance(t, f.profile, f)
		}
	}
	f.releaseEmpty()
}

// releaseEmpty releases draining replicas that hold no request.
func (f *Fleet) releaseEmpty() {
	kept := f.replicas[:0]
	for _, r := range f.replicas {
		if r.draining && r.idle() {
			// Released when the last request finished, not later at the
			// step that noticed.
			r.releasedAt = math.Max(r.removedAt, r.idleSince)
			if r.readyAt > r.removedAt {
				r.releasedAt = r.removedAt // removed while starting
			}
			f.gone = append(f.gone, r)
			continue
		}
		kept = append(kept, r)
	}
	f.replicas = kept
}

// arrive routes request i, refusing it when no replica could ever hold it.
func (f *Fleet) arrive(i int) {
	q := f.requests[i]
	kv := q.InputTokens + q.OutputTokens
	if kv > f.profile.KVCacheTokens {
		f.outcomes[i].Refused = fmt.Sprintf("needs %d KV-cache tokens, a %s replica of %s holds %d",
			kv, f.profile.Model, f.profile.GPU, f.profile.KVCacheTokens)
		return
	}
	fl := flight{req: i, output: q.OutputTokens, kv: kv, left: float64(q.InputTokens)}
	if r := f.leastOutstanding(); r != nil {
		f.route(r, fl)
		return
	}
	f.held = append(f.held, fl)
}

// dispatchHeld routes the requests held at the router while a replica is ready.
func (f *Fleet) dispatchHeld() {
	for len(f.held) > 0 {
		r := f.leastOutstanding()
		if r == nil {
			return
		}
		fl := f.held[0]
		f.held = f.held[1:]
		f.route(r, fl)
	}
}

func (f *Fleet) route(r *replica, fl flight) {
	r.queue = append(r.queue, fl)
	r.admit(f.profile)
}

// leastOutstanding is the ready, not draining replica with the fewest
// outstanding requests, the first added on a tie; nil when none is ready.
func (f *Fleet) leastOutstanding() *replica {
	var best *replica
	for _, r := range f.replicas {
		if r.draining || r.readyAt > f.now {
			continue
		}
		if best == nil || r.outstanding() < best.outstanding() {
			best = r
		}
	}
	return best
}

// mergeByArrival merges two queues each in arrival order.
func mergeByArrival(a, b []flight) []flight {
	out := append(append([]flight(nil), a...), b...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].req < out[j].req })
	return out
}
