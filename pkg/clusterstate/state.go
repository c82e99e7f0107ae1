// Package clusterstate remembers what the autoscaler has asked for and what
// the cluster has delivered: scale-ups in flight, node groups that failed to
// provision and are backed off, and GPU nodes whose device plugin has not
// advertised their GPUs yet. It is the node-group state the pure planners
// read; the loop updates it once per iteration with the current time.
package clusterstate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Options are the timeouts of node provisioning.
type Options struct {
	// MaxNodeProvisionTime is how long a scale-up may take to register its
	// nodes before the group is backed off (--max-node-provision-time, 15m).
	MaxNodeProvisionTime time.Duration
	// MaxNodeStartupTime is how long a registered GPU node may go without
	// advertising its GPUs before it stops counting as upcoming
	// (--max-node-startup-time, 15m).
	MaxNodeStartupTime time.Duration
	Backoff            BackoffOptions
}

// DefaultOptions are the upstream defaults.
func DefaultOptions() Options {
	return Options{MaxNodeProvisionTime: 15 * time.Minute, MaxNodeStartupTime: 15 * time.Minute, Backoff: DefaultBackoff()}
}

// State is carried from one loop to the next. The zero value is not usable:
// call New.
type State struct {
	opts     Options
	requests map[string]*scaleUpRequest
	backoffs map[string]backoff
	// lastScaleUp and friends feed the scale-down delays.
	LastScaleUp          time.Time
	LastScaleDownDelete  time.Time
	LastScaleDownFailure time.Time
}

type scaleUpRequest struct {
	delta int
	time  time.Time
}

// New returns an empty state.
func New(opts Options) *State {
	return &State{opts: opts, requests: map[string]*scaleUpRequest{}, backoffs: map[string]backoff{}}
}

// Options returns the options the state was made with.
func (s *State) Options() Options { return s.opts }

// RecordScaleUp notes that group was asked for delta more nodes at now.
func (s *State) RecordScaleUp(group string, delta int, now time.Time) {
	r := s.requests[group]
	if r == nil {
		r = &scaleUpRequest{}
		s.requests[group] = r
	}
	r.delta += delta
	r.time = now
	s.LastScaleUp = now
}

// RecordFailure backs a group off after a failed scale-up.
func (s *State) RecordFailure(group, reason string, now time.Time) {
	s.backoffs[group] = s.opts.Backoff.next(s.backoffs[group], now, reason)
	delete(s.requests, group)
}

// BackedOff reports whether a group is backed off at now, until when, and why.
func (s *State) BackedOff(group string, now time.Time) (bool, time.Time, string) {
	b, ok := s.backoffs[group]
	if !ok || !now.Before(b.until) {
		return false, time.Time{}, ""
	}
	return true, b.until, b.reason
}

// Shrink asks for a group's target to come back down by Delta nodes that
// never arrived.
type Shrink struct {
	Group  string
	Delta  int
	Reason string
}

// Update compares the scale-ups in flight with the nodes registered in snap
// at now. Requests whose nodes all arrived are closed; requests older than
// MaxNodeProvisionTime back their group off and are returned so the loop can
// shrink the group's target by the nodes that never came.
func (s *State) Update(snap *snapshot.Snapshot, now time.Time) []Shrink {
	var out []Shrink
	for _, id := range slices.Sorted(maps.Keys(s.requests)) {
		r := s.requests[id]
		g := snap.NodeGroup(id)
		if g == nil {
			delete(s.requests, id)
			continue
		}
		missing := g.TargetSize - len(snap.NodesInGroup(id))
		if missing <= 0 {
			delete(s.requests, id)
			continue
		}
		if now.Sub(r.time) < s.opts.MaxNodeProvisionTime {
			continue
		}
		if missing > r.delta {
			missing = r.delta
		}
		reason := fmt.Sprintf("%d node(s) not registered %s after the scale-up", missing, s.opts.MaxNodeProvisionTime)
		s.RecordFailure(id, reason, now)
		out = append(out, Shrink{Group: id, Delta: missing, Reason: reason})
	}
	return out
}

// StartupTaints are put on nodes while they start (by the node lifecycle
// controller and cloud controllers) and come off once they are ready; a
// starting node is simulated without them.
var StartupTaints = []string{
	v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeNetworkUnavailable,
	"node.cloudprovider.kubernetes.io/uninitialized",
}

// Starting lists registered nodes of groups with a template that are still
// starting: not Ready, carrying a startup taint, or (for GPU templates) not
// yet advertising their GPUs. Within MaxNodeStartupTime of their creation
// they are starting and count as upcoming; past it, GPU nodes without
// GPUs are overdue (reported, no longer counted). awaitingGPU says, for
// each starting node, whether it is its GPUs that are late.
func (s *State) Starting(snap *snapshot.Snapshot, now time.Time) (starting, overdue []*snapshot.NodeInfo) {
	for _, ni := range snap.Nodes() {
		g := snap.NodeGroup(ni.Group)
		if g == nil || g.Template == nil {
			continue
		}
		noGPUs := AwaitingGPU(ni.Node, g.Template)
		if !noGPUs && IsReady(ni.Node) && !hasStartupTaint(ni.Node) {
			continue
		}
		switch {
		case now.Sub(ni.Node.CreationTimestamp.Time) < s.opts.MaxNodeStartupTime:
			starting = append(starting, ni)
		case noGPUs:
			overdue = append(overdue, ni)
		}
	}
	return starting, overdue
}

// AwaitingGPU: the template has GPUs and the node has not advertised any.
func AwaitingGPU(node, template *v1.Node) bool {
	return gpu.Allocatable(template) > 0 && gpu.Allocatable(node) == 0
}

func hasStartupTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		for _, k := range StartupTaints {
			if t.Key == k {
				return true
			}
		}
	}
	return false
}

// IsReady reports the node's Ready condition.
func IsReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
