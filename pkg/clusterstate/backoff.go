package clusterstate

import "time"

// BackoffOptions shape the exponential backoff of node groups that failed
// to provision: the first failure backs off Initial, each further failure
// doubles it up to Max, and a group with no failure for Reset starts over.
type BackoffOptions struct {
	Initial time.Duration
	Max     time.Duration
	Reset   time.Duration
}

// DefaultBackoff is 5m doubling to 30m, reset after 3h without failure.
func DefaultBackoff() BackoffOptions {
	return BackoffOptions{Initial: 5 * time.Minute, Max: 30 * time.Minute, Reset: 3 * time.Hour}
}

type backoff struct {
	duration    time.Duration
	until       time.Time
	lastFailure time.Time
	reason      string
}

// next returns the backoff after a failure at now.
func (o BackoffOptions) next(b backoff, now time.Time, reason string) backoff {
	d := o.Initial
	if !b.lastFailure.IsZero() && now.Sub(b.lastFailure) < o.Reset && b.duration > 0 {
		d = b.duration * 2
		if d > o.Max {
			d = o.Max
		}
	}
	return backoff{duration: d, until: now.Add(d), lastFailure: now, reason: reason}
}
