package kwok

import (
	"context"
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// failCreationsLocked marks failed the pending creations of this
// provider's groups that Faults.OutOfCapacity refuses, and queues them for
// FailedCreations, one report per group.
func (p *Provider) failCreationsLocked(ctx context.Context) error {
	if p.faults.OutOfCapacity == nil {
		return nil
	}
	refused := map[string]bool{}
	for _, pn := range p.pending {
		if p.groups[pn.Group] != nil && !pn.Failed && !p.registered[pn.Group][pn.Name] && p.faults.outOfCapacity(pn.Group, pn.Name) {
			refused[pn.Name] = true
		}
	}
	if len(refused) == 0 {
		return nil
	}
	counts := map[string]int{}
	next, err := p.store.update(ctx, func(pending []PendingNode) ([]PendingNode, error) {
		clear(counts)
		for i := range pending {
			if refused[pending[i].Name] && !pending[i].Failed {
				pending[i].Failed = true
				counts[pending[i].Group]++
			}
		}
		return pending, nil
	})
	if err != nil {
		return err
	}
	p.pending = next
	for _, name := range p.order {
		if n := counts[name]; n > 0 {
			p.failed = append(p.failed, cloudprovider.FailedCreations{Group: name, Count: n, Class: cloudprovider.ErrorOutOfResources,
				Code: CodeOutOfCapacity, Message: fmt.Sprintf("kwok: no capacity for %d node(s) of group %s", n, name),
				Zone: p.groups[name].cfg.Zone})
		}
	}
	return nil
}

// FailedCreations returns the creations found failed since the last call,
// each once.
func (p *Provider) FailedCreations() []cloudprovider.FailedCreations {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.failed
	p.failed = nil
	return out
}
