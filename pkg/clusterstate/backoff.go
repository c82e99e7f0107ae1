package clusterstate

import (
	"maps"
	"slices"
	"time"
)

// BackoffOptions shape the exponential backoff of node groups that failed
// to provision: the first failure backs off Initial, a failure after the
// backoff ended doubles it up to Max, and a group with no failure for Reset
// starts over (--initial-node-group-backoff-duration 5m,
// --max-node-group-backoff-duration 30m, --node-group-backoff-reset-timeout 3h).
type BackoffOptions struct {
	Initial time.Duration
	Max     time.Duration
	Reset   time.Duration
}

// DefaultBackoff is 5m doubling to 30m, reset after 3h without failure.
func DefaultBackoff() BackoffOptions {
	return BackoffOptions{Initial: 5 * time.Minute, Max: 30 * time.Minute, Reset: 3 * time.Hour}
}

// Backoff is a group's backoff after failed scale-ups.
type Backoff struct {
	// Duration is the current step; Until ends it.
	Duration time.Duration
	Until    time.Time
	// LastFailure is when the group last failed.
	LastFailure time.Time
	// Reason is a stable code of the last failure (the cloud's error class,
	// or Timeout); Message says it for people.
	Reason, Message string
}

// Failure reasons the state itself records.
const (
	// FailureTimeout: nodes asked for did not register within
	// --max-node-provision-time.
	FailureTimeout = "Timeout"
	// FailureCloudProvider: the cloud refused to change the target.
	FailureCloudProvider = "CloudProviderError"
)

// next returns the backoff after a failure at now. Several failures while
// the group is already backed off (concurrent scale-ups failing together)
// keep the step; only a failure after the backoff ended doubles it.
func (o BackoffOptions) next(b Backoff, now time.Time, reason, message string) Backoff {
	d := o.Initial
	switch {
	case b.LastFailure.IsZero() || b.Duration == 0 || now.Sub(b.LastFailure) > o.Reset:
		// b.Duration is 0 for a group backed off only because an offering
		// it shares ran out (MarkUnavailable): its own first failure.
	case now.Before(b.Until):
		d = b.Duration
	default:
		d = min(2*b.Duration, o.Max)
	}
	return Backoff{Duration: d, Until: now.Add(d), LastFailure: now, Reason: reason, Message: message}
}

// BackedOff returns a group's backoff and whether it is in force at now.
func (s *State) BackedOff(group string, now time.Time) (Backoff, bool) {
	b, ok := s.backoffs[group]
	return b, ok && now.Before(b.Until)
}

// forgetStaleBackoffs drops backoffs whose last failure is older than the
// reset timeout, so the next failure starts over.
func (s *State) forgetStaleBackoffs(now time.Time) {
	for _, g := range slices.Sorted(maps.Keys(s.backoffs)) {
		if now.Sub(s.backoffs[g].LastFailure) > s.opts.Backoff.Reset {
			delete(s.backoffs, g)
		}
	}
}

// Backoffs lists the backoffs in force at now, by group.
func (s *State) Backoffs(now time.Time) map[string]Backoff {
	out := map[string]Backoff{}
	for g, b := range s.backoffs {
		if now.Before(b.Until) {
			out[g] = b
		}
	}
	return out
}
