package clusterstate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Reconciliation is what one Update found to set right between what the
// groups were asked for and what registered.
type Reconciliation struct {
	// Shrinks lower targets by nodes that never came and that no instance
	// holds.
	Shrinks []Shrink
	// Unregistered are instances the cloud created that never registered
	// as nodes within --unregistered-node-removal-time: they are deleted
	// (lowering the target) and no longer counted as upcoming.
	Unregistered []UnregisteredInstances
}

// Shrink asks for a group's target to come back down by Delta nodes that
// never arrived.
type Shrink struct {
	Group string
	Delta int
	// Reason is a stable code; Message says it for people.
	Reason, Message string
}

// UnregisteredInstances are instances of one group to delete.
type UnregisteredInstances struct {
	Group       string
	ProviderIDs []string
	// Since is when the oldest of them was created or first seen.
	Since time.Time
}

// Registration counts one group's nodes that are asked for and not
// registered, as the last Update found.
type Registration struct {
	// Unregistered are slots of the target not registered as nodes
	// (instances that never joined included); Long those past
	// --unregistered-node-removal-time.
	Unregistered, Long int
}

// Update compares the scale-ups in flight with the nodes registered in snap
// at now, for every group:
//   - a request whose nodes all registered is closed;
//   - a gap between a group's target and its nodes with no request behind
//     it (after a restart, a change of leader, or a target changed outside
//     the autoscaler) becomes a reconstructed request, dated by the
//     oldest unregistered instance's creation when the cloud says it, else
//     by now;
//   - a request older than --max-node-provision-time backs its group off,
//     and the target slots no instance holds are given back (Shrinks);
//   - instances that stayed unregistered longer than
//     --unregistered-node-removal-time are returned for deletion, within
//     the group's minimum size unless ForceDeleteUnregisteredNodes.
func (s *State) Update(snap *snapshot.Snapshot, now time.Time) Reconciliation {
	var rec Reconciliation
	s.forgetStaleBackoffs(now)
	seen := map[string]time.Time{}
	s.upcoming = map[string]int{}
	s.registration = map[string]Registration{}
	s.provision = map[string]time.Duration{}
	for node, at := range s.deleted {
		if ni := snap.Node(node); ni == nil || ni.Node.CreationTimestamp.After(at) {
			delete(s.deleted, node) // gone from the cache, or a new node of the same name
		}
	}
	for _, g := range snap.NodeGroups() {
		s.updateGroup(snap, g, now, seen, &rec)
	}
	for id := range s.requests {
		if snap.NodeGroup(id) == nil {
			delete(s.requests, id)
		}
	}
	s.unregistered = seen
	return rec
}

func (s *State) updateGroup(snap *snapshot.Snapshot, g *snapshot.NodeGroup, now time.Time, seen map[string]time.Time, rec *Reconciliation) {
	// A node this process deleted is no longer in the group's target,
	// even while a lagging cache still shows it: counted as registered,
	// it would hide a node on its way (upstream sets such nodes apart
	// too).
	nodes := snap.NodesInGroup(g.ID)
	if len(s.deleted) > 0 {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(ni *snapshot.NodeInfo) bool {
			_, gone := s.deleted[ni.Node.Name]
			return gone
		})
	}
	missing := g.TargetSize - len(nodes)
	recent, long, oldest := s.unregisteredInstances(g, nodes, now, seen)
	noInstance := max(missing, 0)
	if g.InstancesListed {
		noInstance = max(missing-len(recent)-len(long), 0)
	}
	reg := Registration{Unregistered: max(missing, 0), Long: len(long)}
	r := s.requests[g.ID]
	switch {
	case missing <= 0:
		delete(s.requests, g.ID)
		r = nil
	case r == nil:
		at := now
		if !oldest.IsZero() {
			at = oldest
		}
		r = &Request{Group: g.ID, Delta: missing, Time: at, Reconstructed: true}
		s.requests[g.ID] = r
	}
	shrink := 0
	provision := s.provisionTime(g)
	s.provision[g.ID] = provision
	if r != nil && now.Sub(r.Time) >= provision {
		shrink = min(noInstance, r.Delta)
		msg := fmt.Sprintf("%d node(s) not registered %s after the scale-up", min(missing, r.Delta), provision)
		if r.Reconstructed {
			msg = fmt.Sprintf("%d node(s) of the target not registered for %s", missing, provision)
		}
		s.RecordFailure(g.ID, FailureTimeout, msg, now)
		if shrink > 0 {
			rec.Shrinks = append(rec.Shrinks, Shrink{Group: g.ID, Delta: shrink, Reason: FailureTimeout, Message: msg})
		}
	}
	if len(long) > 0 {
		if !s.opts.ForceDeleteUnregisteredNodes {
			long = long[:min(len(long), max(g.TargetSize-shrink-g.MinSize, 0))]
		}
		if len(long) > 0 {
			rec.Unregistered = append(rec.Unregistered, UnregisteredInstances{Group: g.ID, ProviderIDs: long, Since: seen[long[0]]})
		}
	}
	s.registration[g.ID] = reg
	s.upcoming[g.ID] = max(missing-reg.Long-shrink, 0)
}

// unregisteredInstances splits the group's instances with no node into
// recent ones and those unregistered for longer than
// UnregisteredNodeRemovalTime (oldest first), noting since when each was
// seen; oldest is the earliest creation time the cloud gave.
func (s *State) unregisteredInstances(g *snapshot.NodeGroup, nodes []*snapshot.NodeInfo, now time.Time, seen map[string]time.Time) (recent, long []string, oldest time.Time) {
	if !g.InstancesListed {
		return nil, nil, time.Time{}
	}
	registered := make(map[string]bool, len(nodes))
	for _, ni := range nodes {
		registered[ni.Node.Spec.ProviderID] = true
	}
	for _, inst := range g.Instances {
		if inst.State == snapshot.InstanceDeleting || registered[inst.ProviderID] || inst.ProviderID == "" {
			continue
		}
		since, ok := s.unregistered[inst.ProviderID]
		if !ok {
			since = now
		}
		if !inst.CreatedAt.IsZero() && inst.CreatedAt.Before(since) {
			since = inst.CreatedAt
		}
		seen[inst.ProviderID] = since
		if !inst.CreatedAt.IsZero() && (oldest.IsZero() || inst.CreatedAt.Before(oldest)) {
			oldest = inst.CreatedAt
		}
		if now.Sub(since) >= s.opts.UnregisteredNodeRemovalTime {
			long = append(long, inst.ProviderID)
		} else {
			recent = append(recent, inst.ProviderID)
		}
	}
	slices.SortFunc(long, func(a, b string) int {
		if c := seen[a].Compare(seen[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return recent, long, oldest
}

// Registration returns what the last Update counted for group.
func (s *State) Registration(group string) Registration { return s.registration[group] }

// Deadlines lists the times at which the state can change without any
// new input: scale-up requests timing out, backoffs ending, unregistered
// instances becoming removable. Sorted, without duplicates.
func (s *State) Deadlines(now time.Time) []time.Time {
	var out []time.Time
	for _, g := range slices.Sorted(maps.Keys(s.requests)) {
		out = append(out, s.requests[g].Time.Add(s.ProvisionTime(g)))
	}
	for _, b := range s.backoffs {
		if now.Before(b.Until) {
			out = append(out, b.Until)
		}
	}
	for _, since := range s.unregistered {
		out = append(out, since.Add(s.opts.UnregisteredNodeRemovalTime))
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// provisionTime is the group's own MaxNodeProvisionTime when its options
// set one, else the cluster's.
func (s *State) provisionTime(g *snapshot.NodeGroup) time.Duration {
	if g.Options != nil && g.Options.MaxNodeProvisionTime != nil {
		return *g.Options.MaxNodeProvisionTime
	}
	return s.opts.MaxNodeProvisionTime
}

// ProvisionTime is how long a scale-up of group may take to register its
// nodes, as the last Update found the group's options.
func (s *State) ProvisionTime(group string) time.Duration {
	if d, ok := s.provision[group]; ok {
		return d
	}
	return s.opts.MaxNodeProvisionTime
}
