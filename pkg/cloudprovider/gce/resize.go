package gce

import (
	"context"
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// IncreaseSize resizes the MIG to its target plus delta, within max.
func (p *Provider) IncreaseSize(ctx context.Context, id string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("gce: node group %s: increase must be positive, got %d", id, delta)
	}
	return p.change(ctx, id, func(g *group) (changeStep, error) {
		size := g.target + delta
		if size > g.max {
			return changeStep{}, fmt.Errorf("gce: node group %s: target %d + %d is above max %d", id, g.target, delta, g.max)
		}
		ref := g.ref
		return changeStep{
			call:  func(ctx context.Context) error { return p.api.resize(ctx, ref, int64(size)) },
			apply: func(g *group) { g.target = size },
		}, nil
	})
}

// DecreaseTargetSize lowers the target by delta for instances the MIG is
// still creating, by deleting those instances: the ones whose creation
// failed first, then the others by name. It does not resize, because a
// MIG shrinking to a size picks the instances to delete as it likes, which
// could be a running node. It refuses when fewer than delta instances are
// still being created.
func (p *Provider) DecreaseTargetSize(ctx context.Context, id string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("gce: node group %s: decrease must be positive, got %d", id, delta)
	}
	return p.change(ctx, id, func(g *group) (changeStep, error) {
		if delta > len(g.pending) {
			return changeStep{}, fmt.Errorf("gce: node group %s: lowering the target %d by %d needs as many instances being created, there are %d; delete nodes instead", id, g.target, delta, len(g.pending))
		}
		victims := make([]InstanceRef, delta)
		for i, pi := range g.pending[:delta] {
			victims[i] = pi.ref
		}
		ref := g.ref
		return changeStep{
			call: func(ctx context.Context) error { return p.api.deleteInstances(ctx, ref, victims) },
			apply: func(g *group) {
				g.target -= delta
				// Filter a copy: the old slice may be shared with a
				// group a refresh replaced.
				g.pending = slices.DeleteFunc(slices.Clone(g.pending), func(pi pendingInstance) bool {
					return slices.Contains(victims, pi.ref)
				})
			},
		}, nil
	})
}

// DeleteNodes deletes the nodes' instances from the MIG, which lowers its
// target by their number; every node must belong to the group, and the
// group must stay at or above min.
func (p *Provider) DeleteNodes(ctx context.Context, id string, nodes []*v1.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	return p.change(ctx, id, func(g *group) (changeStep, error) {
		if g.target-len(nodes) < g.min {
			return changeStep{}, fmt.Errorf("gce: node group %s: deleting %d nodes would take target %d below min %d", id, len(nodes), g.target, g.min)
		}
		refs := make([]InstanceRef, 0, len(nodes))
		seen := map[InstanceRef]bool{}
		for _, n := range nodes {
			if n == nil {
				return changeStep{}, fmt.Errorf("gce: node group %s: nil node", id)
			}
			ref, err := ParseProviderID(n.Spec.ProviderID)
			if err != nil {
				return changeStep{}, fmt.Errorf("gce: node group %s: node %s: %w", id, n.Name, err)
			}
			if owner := p.instances[ref]; owner != id {
				return changeStep{}, fmt.Errorf("gce: node group %s: node %s (%s) is not an instance of this group (listed in %q)", id, n.Name, n.Spec.ProviderID, owner)
			}
			if !seen[ref] {
				seen[ref] = true
				refs = append(refs, ref)
			}
		}
		sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
		ref := g.ref
		return changeStep{
			call: func(ctx context.Context) error { return p.api.deleteInstances(ctx, ref, refs) },
			// The instances stay mapped to the group until the MIG stops
			// listing them: their nodes are still there while they shut down.
			apply: func(g *group) {
				g.target -= len(refs)
				g.markDeleting(refs)
			},
		}, nil
	})
}

// changeStep is one change of a group: the API call, and the update of
// the cached group once the call succeeded.
type changeStep struct {
	call  func(ctx context.Context) error
	apply func(g *group)
}

// change runs one change of a group. It waits for the group's earlier
// changes, then plan reads the cached group (with mu held; it must change
// nothing) and returns the step, or why the change is refused. The call
// runs without mu, so reads and refreshes go on; the change is counted as
// running meanwhile, so that a refresh listing the group keeps the cached
// size instead (see applyLocked). A failed call leaves the cache alone and
// makes the next Refresh reload: the operation may have run in part.
func (p *Provider) change(ctx context.Context, id string, plan func(g *group) (changeStep, error)) error {
	if err := p.changing.lock(ctx, id); err != nil {
		return fmt.Errorf("gce: node group %s: waiting for the group's change under way: %w", id, err)
	}
	defer p.changing.unlock(id)
	p.mu.Lock()
	g, err := p.groupLocked(id)
	var step changeStep
	if err == nil {
		step, err = plan(g)
	}
	if err != nil {
		p.mu.Unlock()
		return err
	}
	p.markChangeLocked(id, +1)
	p.mu.Unlock()

	err = step.call(ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.markChangeLocked(id, -1)
	if err != nil {
		p.stale = true
		return fmt.Errorf("gce: node group %s: %w", id, err)
	}
	// The group read by plan may have been replaced by a refresh since;
	// the served one carries the same size (applyLocked keeps it).
	if g := p.groups[id]; g != nil {
		step.apply(g)
	}
	return nil
}

// markChangeLocked records the start (+1) or end (-1) of a change.
func (p *Provider) markChangeLocked(id string, d int) {
	p.changes++
	p.changedAt[id] = p.changes
	p.running[id] += d
	if p.running[id] == 0 {
		delete(p.running, id)
	}
}
