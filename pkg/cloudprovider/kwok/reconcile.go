package kwok

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Run calls Reconcile every ReconcileInterval until ctx is done. Run it
// only while holding the leader lease: two replicas reconciling would do no
// harm (creation is idempotent and state writes are guarded), only double
// the API calls.
func (p *Provider) Run(ctx context.Context) {
	ticker := p.clock.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		if err := p.Reconcile(ctx); err != nil && ctx.Err() == nil {
			p.log.Error("kwok reconcile failed; retrying next tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Reconcile brings the cluster to what the clock says: pending nodes whose
// time has come are created, and nodes whose device-plugin delay has passed
// get their GPUs and publish their DRA devices' ResourceSlices. It reads everything it needs from the API, so it is safe
// to call after a restart, and calling it twice changes nothing more.
func (p *Provider) Reconcile(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	st, err := p.store.loadState(ctx)
	if err != nil {
		return err
	}
	p.pending, p.queued = st.Pending, st.Queued
	if err := p.grantQueuedLocked(ctx, now); err != nil {
		return err
	}
	pending := p.pending
	var errs []error
	done := map[string]bool{}
	for _, pn := range pending {
		if pn.CreateAt.After(now) {
			break // sorted by time: the rest are later
		}
		g := p.groups[pn.Group]
		if g == nil {
			// Another provider's: a shard with other groups keeps its
			// state in the same ConfigMap. Its own Reconcile makes it.
			continue
		}
		if pn.Failed || p.faults.neverRegisters(pn.Group, pn.Name) {
			continue // booted, and never joins: the entry stays as its instance
		}
		_, err := p.client.CoreV1().Nodes().Create(ctx, g.newNode(pn.Name, now, p.cfg.DevicePluginDelay), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("kwok: creating node %s of group %s: %w", pn.Name, pn.Group, err))
			continue
		}
		// Counted as registered at once, so the target does not dip
		// between forgetting the entry and the next list.
		p.registered[pn.Group][pn.Name] = true
		done[pn.Name] = true
	}
	if len(done) > 0 {
		next, err := p.store.update(ctx, func(pending []PendingNode) ([]PendingNode, error) {
			kept := pending[:0]
			for _, pn := range pending {
				if !done[pn.Name] {
					kept = append(kept, pn)
				}
			}
			return kept, nil
		})
		if err != nil {
			errs = append(errs, err)
		} else {
			p.pending = next
		}
	}
	if err := p.advertiseGPUsLocked(ctx, now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// publishSlices creates the ResourceSlices of due nodes of DRA groups that
// have not published them, as a DRA driver's kubelet plugin would.
func (p *Provider) publishSlices(ctx context.Context, nodes []*v1.Node, groups []*group) error {
	list, err := p.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kwok: listing resource slices: %w", err)
	}
	have := map[string]bool{}
	for i := range list.Items {
		have[list.Items[i].Name] = true
	}
	var errs []error
	for i, n := range nodes {
		for _, sl := range groups[i].slicesFor(n) {
			if have[sl.Name] {
				continue
			}
			_, err := p.client.ResourceV1().ResourceSlices().Create(ctx, sl, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("kwok: publishing slice %s of node %s: %w", sl.Name, n.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// advertiseGPUsLocked lists the groups' nodes (refreshing the registered
// cache) and patches the GPUs into those whose time has come, as the
// device plugin's registration with the kubelet would.
func (p *Provider) advertiseGPUsLocked(ctx context.Context, now time.Time) error {
	var due, draDue []*v1.Node
	var dueGroups, draGroups []*group
	err := p.listNodesLocked(ctx, func(g *group, n *v1.Node) {
		if g.gpusDue(n, now) {
			due = append(due, n)
			dueGroups = append(dueGroups, g)
		}
		if at, ok := devicesAt(n); ok && len(g.templateSlices) > 0 && !now.Before(at) {
			draDue = append(draDue, n)
			draGroups = append(draGroups, g)
		}
	})
	if err != nil {
		return err
	}
	var errs []error
	if len(draDue) > 0 {
		if err := p.publishSlices(ctx, draDue, draGroups); err != nil {
			errs = append(errs, err)
		}
	}
	for i, n := range due {
		_, err := p.client.CoreV1().Nodes().PatchStatus(ctx, n.Name, dueGroups[i].gpuPatch())
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kwok: advertising GPUs of node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}
