package serving

import "math"

// tokenEpsilon absorbs float rounding: a sequence with fewer tokens left
// than this has finished.
const tokenEpsilon = 1e-6

// flight is one request on its way through a replica.
type flight struct {
	req int // index into the fleet's requests
	// output is the tokens the request generates.
	output int64
	// kv is the KV-cache tokens the request holds once admitted: its prompt
	// and its whole output, reserved up front so that no admitted request
	// is ever preempted.
	kv int64
	// left is the prompt tokens still to prefill, then the output tokens
	// still to decode.
	left float64
}

// replica is one serving replica: requests wait in its queue until the KV
// cache has room for them (first come, first admitted, so a large request
// is not overtaken forever), are prefilled one at a time at the prefill
// throughput, then decode together, each at min(single, batch / n) tokens
// a second. The first token comes at the end of the prefill.
type replica struct {
	name string
	// readyAt is when it starts serving; startedAt is when its GPUs were
	// taken (the scale-up), releasedAt when they were given back (-1 while
	// held).
	startedAt, readyAt, releasedAt float64
	// removedAt is when Remove was called; idleSince when the last request
	// in it finished (its readiness before the first).
	removedAt, idleSince float64
	draining             bool
	now                  float64
	queue                []flight // waiting for KV room
	prefill              []flight // admitted; the head is being prefilled
	decoding             []flight // in admission order
	kvUsed               int64
	busy                 float64 // seconds with any request prefilling or decoding
}

// outstanding is the requests routed to r and not finished.
func (r *replica) outstanding() int { return len(r.queue) + len(r.prefill) + len(r.decoding) }

// waiting is the requests routed to r that have no first token yet.
func (r *replica) waiting() int { return len(r.queue) + len(r.prefill) }

func (r *replica) idle() bool { return r.outstanding() == 0 }

// admit moves requests from the queue while the KV cache has room for the
// head.
func (r *replica) admit(p Profile) {
	for len(r.queue) > 0 && r.kvUsed+r.queue[0].kv <= p.KVCacheTokens {
		f := r.queue[0]
		r.queue = r.queue[1:]
		r.kvUsed += f.kv
		r.prefill = append(r.prefill, f)
	}
}

// decodeRate is each decoding sequence's tokens a second.
func (r *replica) decodeRate(p Profile) float64 {
	if len(r.decoding) == 0 {
		return 0
	}
	return math.Min(p.DecodeTokensPerSecond, p.BatchDecodeTokensPerSecond/float64(len(r.decoding)))
}

// nextEvent is the time of r's next completion (a prefill or a decode), or
// +Inf when nothing runs.
func (r *replica) nextEvent(p Profile) float64 {
	next := math.Inf(1)
	if len(r.prefill) > 0 {
		next = r.now + r.prefill[0].left/p.PrefillTokensPerSecond
	}
	if rate := r.decodeRate(p); rate > 0 {
		least := math.Inf(1)
		for _, f := range r.decoding {
			least = math.Min(least, f.left)
		}
		next = math.Min(next, r.now+least/rate)
	}
	return next
}

// hooks receive what happens inside a replica.
type hooks interface {
	firstToken(req int, at float64)
	finished(req int, at float64)
}

// advance runs r to time t (not before its readiness: a replica that is not
// ready holds nothing).
func (r *replica) advance(t float64, p Profile, h hooks) {
	for r.now < t {
		next := r.nextEvent(p)
		end := math.Min(next, t)
		r.progress(end-r.now, p)
		r.now = end
		if next <= t {
			r.complete(p, h)
		}
	}
}

// progress spends dt seconds on the head prefill and every decoding sequence.
func (r *replica) progress(dt float64, p Profile) {
	if dt <= 0 {
		return
	}
	if len(r.prefill) > 0 || len(r.decoding) > 0 {
		r.busy += dt
	}
	if len(r.prefill) > 0 {
		r.prefill[0].left -= dt * p.PrefillTokensPerSecond
	}
	if rate := r.decodeRate(p); rate > 0 {
		for i := range r.decoding {
			r.decoding[i].left -= dt * rate
		}
	}
}

// done says whether left tokens at rate are finished: fewer than
// tokenEpsilon, or less time than r.now can resolve (which would otherwise
// never pass).
func (r *replica) done(left, rate float64) bool {
	return left <= tokenEpsilon || r.now+left/rate == r.now
}

// complete hands on every prefill and decode that has finished at r.now.
func (r *replica) complete(p Profile, h hooks) {
	if len(r.prefill) > 0 && r.done(r.prefill[0].left, p.PrefillTokensPerSecond) {
		f := r.prefill[0]
		r.prefill = r.prefill[1:]
		h.firstToken(f.req, r.now)
		// The prefill produced the first output token; the rest decode.
		out := f.output - 1
		if out > 0 {
			f.left = float64(out)
			r.decoding = append(r.decoding, f)
		} else {
			r.kvUsed -= f.kv
			h.finished(f.req, r.now)
		}
	}
	rate := r.decodeRate(p)
	kept := r.decoding[:0]
	for _, f := range r.decoding {
		if r.done(f.left, rate) {
			r.kvUsed -= f.kv
			h.finished(f.req, r.now)
			continue
		}
		kept = append(kept, f)
	}
	r.decoding = kept
	r.admit(p)
	if r.idle() {
		r.idleSince = r.now
	}
}
