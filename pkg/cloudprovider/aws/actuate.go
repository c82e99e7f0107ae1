package aws

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// IncreaseSize raises the group's desired capacity by delta, up to its max.
func (p *Provider) IncreaseSize(ctx context.Context, name string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("aws: node group %s: size increase must be positive, got %d", name, delta)
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	g, err := p.lookup(name)
	if err != nil {
		return err
	}
	target := g.desired + delta
	if target > g.maxSize {
		return fmt.Errorf("aws: node group %s: desired capacity %d + %d would exceed maxSize %d", name, g.desired, delta, g.maxSize)
	}
	if err := p.setDesired(ctx, name, target); err != nil {
		return err
	}
	p.update(name, func(g *group) { g.desired = target })
	return nil
}

// DeleteNodes terminates the nodes' instances with
// TerminateInstanceInAutoScalingGroup, decrementing the desired capacity,
// so Auto Scaling does not replace them. Every node must be an instance of
// the group and the group must stay at or above its minimum; nothing is
// terminated otherwise.
func (p *Provider) DeleteNodes(ctx context.Context, name string, nodes []*v1.Node) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	g, err := p.lookup(name)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		if n == nil {
			return fmt.Errorf("aws: node group %s: nil node", name)
		}
		id, err := InstanceID(n.Spec.ProviderID)
		if err != nil {
			return fmt.Errorf("aws: node group %s: node %s: %w", name, n.Name, err)
		}
		if seen[id] {
			return fmt.Errorf("aws: node group %s: node %s (instance %s) given twice", name, n.Name, id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if err := p.checkMembers(ctx, g, ids, nodes); err != nil {
		return err
	}
	if g.desired-len(ids) < g.minSize {
		return fmt.Errorf("aws: node group %s: deleting %d node(s) would take desired capacity %d below minSize %d", name, len(ids), g.desired, g.minSize)
	}
	var errs []error
	for i, id := range ids {
		if err := p.terminate(ctx, name, id); err != nil {
			errs = append(errs, fmt.Errorf("%w (node %s)", err, nodes[i].Name))
		}
	}
	return errors.Join(errs...)
}

// checkMembers confirms every instance belongs to g, asking Auto Scaling
// about instances the cache does not hold.
func (p *Provider) checkMembers(ctx context.Context, g group, ids []string, nodes []*v1.Node) error {
	var ask []string
	for _, id := range ids {
		if _, ok := g.instances[id]; !ok {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	owners, err := p.describeInstances(ctx, ask)
	if err != nil {
		return fmt.Errorf("aws: node group %s: %w", g.name, err)
	}
	for i, id := range ids {
		if _, cached := g.instances[id]; cached {
			continue
		}
		if got := owners[id].group; got != g.name {
			if got == "" {
				got = "none"
			}
			return fmt.Errorf("aws: node %s (instance %s) belongs to Auto Scaling group %s, not %s: %w", nodes[i].Name, id, got, g.name, cloudprovider.ErrNotFound)
		}
	}
	return nil
}

// DecreaseTargetSize takes back delta instances that were asked for and
// never became nodes: first capacity Auto Scaling has not launched at all
// (desired above the instance count), lowered with SetDesiredCapacity,
// which then terminates nothing; then instances still Pending that no node
// has registered for, terminated one by one with the desired capacity
// decremented. Running instances are never touched: when too few
// instances qualify, nothing changes and the error says why. The group is
// read afresh, not from the cache.
func (p *Provider) DecreaseTargetSize(ctx context.Context, name string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("aws: node group %s: size decrease must be positive, got %d", name, delta)
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	cached, err := p.lookup(name)
	if err != nil {
		return err
	}
	found, err := p.describeByNames(ctx, []string{name})
	if err != nil {
		return fmt.Errorf("aws: node group %s: %w", name, err)
	}
	asg, ok := found[name]
	if !ok {
		p.markStale()
		return fmt.Errorf("aws: node group %s: Auto Scaling group no longer exists: %w", name, cloudprovider.ErrNotFound)
	}
	g := newGroup(asg)
	missing := max(g.desired-len(g.instances), 0)
	fromMissing := min(delta, missing)
	victims := p.unregisteredPending(g)
	rest := delta - fromMissing
	if rest > len(victims) {
		return fmt.Errorf("aws: node group %s: cannot lower desired capacity %d by %d: %d not launched and %d pending without a node; the other %d instance(s) are running or registered",
			name, g.desired, delta, missing, len(victims), len(g.instances)-len(victims))
	}
	victims = victims[:rest]
	if g.desired-delta < cached.minSize {
		return fmt.Errorf("aws: node group %s: lowering desired capacity %d by %d would go below minSize %d", name, g.desired, delta, cached.minSize)
	}
	if fromMissing > 0 {
		if err := p.setDesired(ctx, name, g.desired-fromMissing); err != nil {
			return err
		}
		g.desired -= fromMissing
	}
	p.update(name, func(c *group) {
		c.desired, c.instances = g.desired, g.instances
		for id := range g.instances {
			p.owner[id] = name
		}
	})
	var errs []error
	for _, id := range victims {
		errs = append(errs, p.terminate(ctx, name, id))
	}
	return errors.Join(errs...)
}

// unregisteredPending lists g's Pending instances no node has registered
// for, newest id last, so the choice is reproducible.
func (p *Provider) unregisteredPending(g *group) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, inst := range g.instances {
		if inst.pending() && !p.registered[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func (p *Provider) setDesired(ctx context.Context, name string, desired int) error {
	if desired < 0 || desired > math.MaxInt32 {
		return fmt.Errorf("aws: node group %s: desired capacity %d out of range", name, desired)
	}
	_, err := p.as.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: ptr.To(name), DesiredCapacity: ptr.To(int32(desired)), HonorCooldown: ptr.To(false),
	})
	if err != nil {
		p.markStale()
		return fmt.Errorf("aws: node group %s: SetDesiredCapacity %d: %w", name, desired, err)
	}
	return nil
}

// terminate ends one instance and lowers the desired capacity with it.
func (p *Provider) terminate(ctx context.Context, name, id string) error {
	_, err := p.as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: ptr.To(id), ShouldDecrementDesiredCapacity: ptr.To(true),
	})
	if err != nil {
		p.markStale()
		return fmt.Errorf("aws: node group %s: TerminateInstanceInAutoScalingGroup %s: %w", name, id, err)
	}
	p.update(name, func(g *group) {
		g.desired--
		delete(g.instances, id)
	})
	p.mu.Lock()
	delete(p.owner, id)
	p.mu.Unlock()
	return nil
}

// update changes a cached group, if it is still served; change runs with
// mu held.
func (p *Provider) update(name string, change func(*group)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g := p.groups[name]; g != nil {
		change(g)
	}
}
