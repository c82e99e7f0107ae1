// Package clusterstate remembers what the autoscaler has asked for and what
// the cluster has delivered: scale-ups in flight (reconstructed from the
// cloud's targets after a restart), node groups that failed to provision
// and are backed off, instances that never registered, node removals in
// progress, the times scale-down's cooldowns start from, and nodes still
// starting (not Ready, startup taints, accelerators not advertised).
//
// Only the decision core (pkg/autoscaler) changes it, once per loop, from
// the outcomes of earlier actions and the snapshot; shells never see it.
package clusterstate

import (
	"maps"
	"slices"
	"time"
)

// Options are the timeouts of node provisioning and registration.
type Options struct {
	// MaxNodeProvisionTime is how long a scale-up may take to register its
	// nodes before the group is backed off and its target lowered
	// (--max-node-provision-time, 15m).
	MaxNodeProvisionTime time.Duration
	// MaxNodeStartupTime is how long a registered node may stay not Ready,
	// tainted for start-up or without its accelerators before it stops
	// counting as upcoming (--max-node-startup-time, 15m).
	MaxNodeStartupTime time.Duration
	// UnregisteredNodeRemovalTime is how long an instance the cloud holds
	// may go without registering as a node before it is deleted
	// (--unregistered-node-removal-time, 15m).
	UnregisteredNodeRemovalTime time.Duration
	// ForceDeleteUnregisteredNodes deletes such instances even when that
	// takes the group below its minimum size
	// (--force-delete-unregistered-nodes, false).
	ForceDeleteUnregisteredNodes bool
	// Readiness says which taints mark a starting node.
	Readiness ReadinessOptions
	Backoff   BackoffOptions
}

// DefaultOptions are the upstream defaults.
func DefaultOptions() Options {
	return Options{
		MaxNodeProvisionTime: 15 * time.Minute, MaxNodeStartupTime: 15 * time.Minute,
		UnregisteredNodeRemovalTime: 15 * time.Minute,
		Readiness:                   DefaultReadiness(), Backoff: DefaultBackoff(),
	}
}

// State is carried from one loop to the next. The zero value is not usable:
// call New.
type State struct {
	opts     Options
	requests map[string]*Request
	backoffs map[string]Backoff
	// unregistered remembers since when each instance (by provider ID) has
	// been seen without a node.
	unregistered map[string]time.Time
	deleting     map[string]Deletion
	// deleted are nodes whose removal this process finished, with when:
	// the cloud deleted them, though a lagging cache may still show them.
	// They are forgotten once the snapshot no longer holds them.
	deleted map[string]time.Time
	// upcoming is, per group, the nodes pending pods may count on, as the
	// last Update found them.
	upcoming     map[string]int
	registration map[string]Registration
	// provision is each group's provisioning time, as the last Update
	// found its options.
	provision map[string]time.Duration

	lastScaleUp, lastScaleDownDelete, lastScaleDownFailure time.Time

	// interrupted are the nodes being taken away, by name; interruptions
	// are each group's interruption times, for its rate.
	interrupted   map[string]Interruption
	interruptions map[string][]time.Time
}

// Request is a scale-up in flight: Delta nodes asked of a group at Time,
// not all registered yet.
type Request struct {
	Group string
	Delta int
	Time  time.Time
	// Reconstructed requests were not made by this process: the group's
	// target already exceeded its nodes when it was first seen (after a
	// restart, a change of leader, or a change made outside the
	// autoscaler). Time is then the oldest unregistered instance's
	// creation, or when the gap was first seen.
	Reconstructed bool
}

// Deletion is a node removal in progress.
type Deletion struct {
	Node  string
	Group string
	// Drain is true when the node had pods to evict.
	Drain bool
	Since time.Time
}

// New returns an empty state.
func New(opts Options) *State {
	return &State{
		opts: opts, requests: map[string]*Request{}, backoffs: map[string]Backoff{},
		unregistered: map[string]time.Time{}, deleting: map[string]Deletion{}, deleted: map[string]time.Time{},
		upcoming: map[string]int{}, registration: map[string]Registration{}, provision: map[string]time.Duration{},
		interrupted: map[string]Interruption{}, interruptions: map[string][]time.Time{},
	}
}

// Options returns the options the state was made with.
func (s *State) Options() Options { return s.opts }

// RecordScaleUp notes that group was asked for delta more nodes at now.
func (s *State) RecordScaleUp(group string, delta int, now time.Time) {
	r := s.requests[group]
	if r == nil {
		r = &Request{Group: group}
		s.requests[group] = r
	}
	r.Delta += delta
	r.Time = now
	r.Reconstructed = false
	if now.After(s.lastScaleUp) {
		s.lastScaleUp = now
	}
}

// RecordFailure backs a group off after a failed scale-up and forgets its
// request: reason is a stable code, message says it for people.
func (s *State) RecordFailure(group, reason, message string, now time.Time) {
	s.backoffs[group] = s.opts.Backoff.next(s.backoffs[group], now, reason, message)
	delete(s.requests, group)
}

// RecordDeletionStarted notes a node removal the actuator was asked to do.
func (s *State) RecordDeletionStarted(d Deletion) { s.deleting[d.Node] = d }

// RecordDeletionDone ends a removal that deleted its node at the time given.
func (s *State) RecordDeletionDone(node string, at time.Time) {
	delete(s.deleting, node)
	s.deleted[node] = at
	if at.After(s.lastScaleDownDelete) {
		s.lastScaleDownDelete = at
	}
}

// RecordDeletionFailed ends a removal that failed; scale-down then waits
// --scale-down-delay-after-failure.
func (s *State) RecordDeletionFailed(node string, at time.Time) {
	delete(s.deleting, node)
	if at.After(s.lastScaleDownFailure) {
		s.lastScaleDownFailure = at
	}
}

// RecordDeletionAborted ends a removal that was called off before anything
// was evicted (the node's pods changed): neither a removal nor a failure.
func (s *State) RecordDeletionAborted(node string) { delete(s.deleting, node) }

// Deleting lists the removals in progress, sorted by node.
func (s *State) Deleting() []Deletion {
	out := make([]Deletion, 0, len(s.deleting))
	for _, k := range slices.Sorted(maps.Keys(s.deleting)) {
		out = append(out, s.deleting[k])
	}
	return out
}

// IsDeleting reports whether a removal of node is in progress.
func (s *State) IsDeleting(node string) bool {
	_, ok := s.deleting[node]
	return ok
}

// Requests lists the scale-ups in flight, sorted by group.
func (s *State) Requests() []Request {
	out := make([]Request, 0, len(s.requests))
	for _, k := range slices.Sorted(maps.Keys(s.requests)) {
		out = append(out, *s.requests[k])
	}
	return out
}

// Request returns the scale-up in flight for group, if any.
func (s *State) Request(group string) (Request, bool) {
	r, ok := s.requests[group]
	if !ok {
		return Request{}, false
	}
	return *r, true
}

// Upcoming is how many nodes of group pending pods may count on: asked
// for and not registered (instances that stayed unregistered too long
// excepted), as the last Update found.
func (s *State) Upcoming(group string) int { return s.upcoming[group] }

// Ordered is how many nodes of group the cloud was asked for that are not
// registered, as the last Update found: the upcoming ones, and the
// instances that stayed unregistered past --unregistered-node-removal-time
// until the cloud lists them as deleting (their deletion may fail, or be
// called off when the instance did register and a lagging cache hides
// it). The cluster limits count them; pending pods count on the upcoming
// ones only.
func (s *State) Ordered(group string) int { return s.upcoming[group] + s.registration[group].Long }

// LastScaleUp, LastScaleDownDelete and LastScaleDownFailure start the
// scale-down cooldowns; zero when never.
func (s *State) LastScaleUp() time.Time          { return s.lastScaleUp }
func (s *State) LastScaleDownDelete() time.Time  { return s.lastScaleDownDelete }
func (s *State) LastScaleDownFailure() time.Time { return s.lastScaleDownFailure }
