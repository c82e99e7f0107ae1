package kwok

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// QueuedRecord is a queued request the kwok cloud holds, as a GKE resize
// request of a flex-start node pool: granted Config.QueuedDelay after it
// was made, all its nodes at once (then pending as a scale-up's are), or
// failed then when Faults.OutOfCapacity refuses it. Records are kept, so
// that asking again under the same name after a restart adds nothing.
type QueuedRecord struct {
	Group       string    `json:"group"`
	Name        string    `json:"name"`
	Count       int       `json:"count"`
	RequestedAt time.Time `json:"requestedAt"`
	GrantAt     time.Time `json:"grantAt"`
	// RunDuration is kept as asked; the kwok cloud does not end the nodes.
	RunDuration time.Duration `json:"runDuration,omitempty"`
	Granted     bool          `json:"granted,omitempty"`
	// Failed is why the cloud failed the request; "" when it did not.
	Failed string `json:"failed,omitempty"`
}

func sortQueued(q []QueuedRecord) {
	sort.Slice(q, func(i, j int) bool {
		if !q[i].RequestedAt.Equal(q[j].RequestedAt) {
			return q[i].RequestedAt.Before(q[j].RequestedAt)
		}
		return q[i].Group+"/"+q[i].Name < q[j].Group+"/"+q[j].Name
	})
}

var _ cloudprovider.QueuedCapacity = (*Provider)(nil)

// RequestQueued records a queued request for count nodes of a group with
// the queuedprovisioning option; one of that name already held is not
// asked again. The group's max counts the requests still waiting.
func (p *Provider) RequestQueued(ctx context.Context, name, request string, count int, runDuration time.Duration) error {
	if count <= 0 {
		return fmt.Errorf("kwok: node group %s: queued request %s: count must be positive, got %d", name, request, count)
	}
	g, err := p.group(name)
	if err != nil {
		return err
	}
	if !g.cfg.Options.TakesQueued() {
		return fmt.Errorf("kwok: node group %s: queued request %s: the group takes no queued capacity (set its %s option)",
			name, request, cloudprovider.OptionQueuedProvisioning)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.faults.call(OpRequestQueued, name); err != nil {
		return err
	}
	now := p.clock.Now()
	st, err := p.store.updateState(ctx, func(st *storedState) error {
		waiting := 0
		for _, q := range st.Queued {
			if q.Group != name {
				continue
			}
			if q.Name == request {
				return nil
			}
			if !q.Granted && q.Failed == "" {
				waiting += q.Count
			}
		}
		if target := p.targetLocked(name, st.Pending) + waiting; target+count > g.cfg.MaxSize {
			return fmt.Errorf("kwok: node group %s: queued request %s: target %d (requests waiting included) + %d would exceed maxSize %d",
				name, request, target, count, g.cfg.MaxSize)
		}
		st.Queued = append(st.Queued, QueuedRecord{Group: name, Name: request, Count: count, RequestedAt: now,
			GrantAt: now.Add(p.cfg.QueuedDelay), RunDuration: runDuration})
		return nil
	})
	if err != nil {
		return err
	}
	p.pending, p.queued = st.Pending, st.Queued
	return nil
}

// grantQueuedLocked grants this provider's queued requests whose time has
// come: their nodes join the pending creations in the same write, or the
// request fails when Faults.OutOfCapacity refuses it.
func (p *Provider) grantQueuedLocked(ctx context.Context, now time.Time) error {
	due := func(q QueuedRecord) bool {
		return p.groups[q.Group] != nil && !q.Granted && q.Failed == "" && !q.GrantAt.After(now)
	}
	some := false
	for _, q := range p.queued {
		some = some || due(q)
	}
	if !some {
		return nil
	}
	st, err := p.store.updateState(ctx, func(st *storedState) error {
		taken := p.namesLocked(st.Pending)
		for i := range st.Queued {
			q := &st.Queued[i]
			if !due(*q) {
				continue
			}
			if p.faults.outOfCapacity(q.Group, q.Name) {
				q.Failed = fmt.Sprintf("kwok: no capacity for the %d node(s) of queued request %s", q.Count, q.Name)
				continue
			}
			for range q.Count {
				n := uniqueName(q.Group, taken)
				taken[n] = true
				st.Pending = append(st.Pending, PendingNode{Group: q.Group, Name: n, CreateAt: now.Add(p.cfg.ProvisioningDelay),
					RequestedAt: q.GrantAt})
			}
			q.Granted = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.pending, p.queued = st.Pending, st.Queued
	return nil
}

// queuedOfLocked lists a group's queued requests as the core sees them.
func (p *Provider) queuedOfLocked(group string) []snapshot.QueuedRequest {
	var out []snapshot.QueuedRequest
	for _, q := range p.queued {
		if q.Group != group {
			continue
		}
		r := snapshot.QueuedRequest{Name: q.Name, Count: q.Count, State: snapshot.QueuedWaiting}
		switch {
		case q.Failed != "":
			r.State, r.Message = snapshot.QueuedFailed, q.Failed
		case q.Granted:
			r.State = snapshot.QueuedProvisioned
		}
		out = append(out, r)
	}
	return out
}
