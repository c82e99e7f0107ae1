package gce

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// IncreaseSize resizes the MIG to its target plus delta, within max.
func (p *Provider) IncreaseSize(ctx context.Context, id string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("gce: node group %s: increase must be positive, got %d", id, delta)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g, err := p.groupLocked(id)
	if err != nil {
		return err
	}
	size := g.target + delta
	if size > g.max {
		return fmt.Errorf("gce: node group %s: target %d + %d is above max %d", id, g.target, delta, g.max)
	}
	if err := p.api.resize(ctx, g.ref, int64(size)); err != nil {
		return fmt.Errorf("gce: node group %s: %w", id, err)
	}
	g.target = size
	return nil
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
	p.mu.Lock()
	defer p.mu.Unlock()
	g, err := p.groupLocked(id)
	if err != nil {
		return err
	}
	if delta > len(g.pending) {
		return fmt.Errorf("gce: node group %s: lowering the target %d by %d needs as many instances being created, there are %d; delete nodes instead", id, g.target, delta, len(g.pending))
	}
	victims := make([]InstanceRef, delta)
	for i, pi := range g.pending[:delta] {
		victims[i] = pi.ref
	}
	if err := p.api.deleteInstances(ctx, g.ref, victims); err != nil {
		return fmt.Errorf("gce: node group %s: %w", id, err)
	}
	g.target -= delta
	g.pending = g.pending[delta:]
	return nil
}

// DeleteNodes deletes the nodes' instances from the MIG, which lowers its
// target by their number; every node must belong to the group, and the
// group must stay at or above min.
func (p *Provider) DeleteNodes(ctx context.Context, id string, nodes []*v1.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g, err := p.groupLocked(id)
	if err != nil {
		return err
	}
	if g.target-len(nodes) < g.min {
		return fmt.Errorf("gce: node group %s: deleting %d nodes would take target %d below min %d", id, len(nodes), g.target, g.min)
	}
	refs := make([]InstanceRef, 0, len(nodes))
	seen := map[InstanceRef]bool{}
	for _, n := range nodes {
		if n == nil {
			return fmt.Errorf("gce: node group %s: nil node", id)
		}
		ref, err := ParseProviderID(n.Spec.ProviderID)
		if err != nil {
			return fmt.Errorf("gce: node group %s: node %s: %w", id, n.Name, err)
		}
		if owner := p.instances[ref]; owner != id {
			return fmt.Errorf("gce: node group %s: node %s (%s) is not an instance of this group (listed in %q)", id, n.Name, n.Spec.ProviderID, owner)
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	if err := p.api.deleteInstances(ctx, g.ref, refs); err != nil {
		return fmt.Errorf("gce: node group %s: %w", id, err)
	}
	g.target -= len(refs)
	// The instances stay mapped to the group until the MIG stops listing
	// them: their nodes are still there while they shut down.
	return nil
}
