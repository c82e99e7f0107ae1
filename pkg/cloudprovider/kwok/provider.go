// Package kwok is the cloud provider for local clusters (--cloud-provider=kwok):
// a node group is a set of plain Node objects, labelled with
// gpuscale.dev/node-group and annotated for the kwok controller, which keeps
// them Ready. Scale-ups become Node objects after the configured
// provisioning delay, and GPU nodes register without GPUs, which appear only
// after the device-plugin delay, as on real clusters, so the autoscaler's
// handling of "GPU not yet advertised" can be exercised end to end.
//
// State and restarts: registered nodes are found by their label; the time a
// node's GPUs appear is an annotation on the node; pending creations (asked
// for, not yet created) are kept in the annotation gpuscale.dev/kwok-pending
// of the ConfigMap gpuscale-kwok-state in the provider's namespace, each
// with its node name and creation time. A new process, or a new leader,
// reads the same state and carries on; names make creation idempotent.
//
// A group's target size is its registered nodes plus its pending ones: the
// most the group will hold when everything asked for has arrived. A node
// deleted by hand is not replaced (this is a local cluster, not an Auto
// Scaling group), so the target follows it down.
//
// GPU groups should carry an accelerator label in their template, as EKS and
// GKE nodes do: without one, a node whose GPUs are not advertised yet is
// indistinguishable from a CPU node, which is exactly the trap real clusters
// fall into.
package kwok

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ProviderName is the --cloud-provider value.
const ProviderName = "kwok"

// DefaultReconcileInterval is how often Run creates due nodes and
// advertises due GPUs.
const DefaultReconcileInterval = time.Second

// Options build a Provider.
type Options struct {
	// Client talks to the cluster whose Node objects are the groups.
	Client kubernetes.Interface
	// Config is the parsed configuration; it is validated again.
	Config *Config
	// Namespace holds the state ConfigMap (the autoscaler's --namespace).
	Namespace string
	// Clock defaults to the real clock; tests pass a fake one.
	Clock clock.WithTicker
	// Logger receives what Run cannot return; nil means slog.Default().
	Logger *slog.Logger
	// ReconcileInterval is Run's period (DefaultReconcileInterval when 0).
	ReconcileInterval time.Duration
	// Faults inject cloud failures, for tests (faults.go).
	Faults Faults
}

// Provider implements cloudprovider.CloudProvider with Node objects. It is
// safe for concurrent use: the autoscaler loop and Run share it.
type Provider struct {
	client   kubernetes.Interface
	clock    clock.WithTicker
	log      *slog.Logger
	interval time.Duration
	cfg      *Config
	groups   map[string]*group
	order    []string
	store    stateStore

	// mu serialises whole operations, API calls included: they are few and
	// short, and one at a time keeps the cache and the stored state equal.
	mu sync.Mutex
	// registered holds the node names of each group as last listed or
	// changed by this provider.
	registered map[string]map[string]bool
	// nodeInstances are the registered nodes as instances, by node name.
	nodeInstances map[string]snapshot.Instance
	pending       []PendingNode
	// queued are the queued requests, as last read or written.
	queued []QueuedRecord
	faults Faults
	// failed are the creations Faults.OutOfCapacity failed that
	// FailedCreations has not reported yet.
	failed []cloudprovider.FailedCreations
}

var (
	_ cloudprovider.CloudProvider           = (*Provider)(nil)
	_ cloudprovider.CreationFailureReporter = (*Provider)(nil)
)

// New validates the options; it makes no API call (Refresh does).
func New(opts Options) (*Provider, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("kwok: a Kubernetes client is required")
	case opts.Config == nil:
		return nil, errors.New("kwok: a configuration is required")
	case opts.Namespace == "":
		return nil, errors.New("kwok: a namespace for the state ConfigMap is required")
	case opts.ReconcileInterval < 0:
		return nil, fmt.Errorf("kwok: reconcile interval must not be negative, got %s", opts.ReconcileInterval)
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	p := &Provider{
		client: opts.Client, clock: opts.Clock, log: opts.Logger, interval: opts.ReconcileInterval,
		cfg: opts.Config, groups: map[string]*group{}, registered: map[string]map[string]bool{},
		nodeInstances: map[string]snapshot.Instance{}, faults: opts.Faults,
		store: stateStore{client: opts.Client, namespace: opts.Namespace},
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.interval == 0 {
		p.interval = DefaultReconcileInterval
	}
	for _, gc := range opts.Config.NodeGroups {
		p.groups[gc.Name] = newGroup(gc)
		p.order = append(p.order, gc.Name)
		p.registered[gc.Name] = map[string]bool{}
	}
	sort.Strings(p.order)
	return p, nil
}

// Name is "kwok".
func (p *Provider) Name() string { return ProviderName }

// Refresh lists the groups' nodes and reads the pending creations.
func (p *Provider) Refresh(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.listNodesLocked(ctx, nil); err != nil {
		return err
	}
	st, err := p.store.loadState(ctx)
	if err != nil {
		return err
	}
	p.pending, p.queued = st.Pending, st.Queued
	return p.failCreationsLocked(ctx)
}

// listNodesLocked replaces the registered cache from the API and hands each
// managed node to visit.
func (p *Provider) listNodesLocked(ctx context.Context, visit func(*group, *v1.Node)) error {
	list, err := p.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelNodeGroup})
	if err != nil {
		return fmt.Errorf("kwok: listing nodes: %w", err)
	}
	registered := make(map[string]map[string]bool, len(p.groups))
	for name := range p.groups {
		registered[name] = map[string]bool{}
	}
	instances := make(map[string]snapshot.Instance, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		g := p.groups[n.Labels[LabelNodeGroup]]
		if g == nil || n.DeletionTimestamp != nil {
			continue // a group no longer configured, or a node on its way out
		}
		registered[g.cfg.Name][n.Name] = true
		instances[n.Name] = instanceOf(n)
		if visit != nil {
			visit(g, n)
		}
	}
	p.registered, p.nodeInstances = registered, instances
	return nil
}

// NodeGroups returns every configured group, sorted by name, with its
// template (GPUs included, so groups at zero can scale up).
func (p *Provider) NodeGroups() []snapshot.NodeGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]snapshot.NodeGroup, 0, len(p.order))
	now := p.clock.Now()
	for _, name := range p.order {
		g := p.groups[name]
		ng := g.snapshotGroup(p.targetLocked(name, p.pending))
		ng.Instances, ng.InstancesListed = p.instancesLocked(name, now), true
		ng.Options = g.cfg.Options
		ng.Queued = p.queuedOfLocked(name)
		out = append(out, ng)
	}
	return out
}

// NodeGroupForNode returns the node's group from its label, or "" for nodes
// of no configured group.
func (p *Provider) NodeGroupForNode(node *v1.Node) (string, error) {
	if node == nil {
		return "", errors.New("kwok: nil node")
	}
	name := node.Labels[LabelNodeGroup]
	if p.groups[name] == nil {
		return "", nil
	}
	return name, nil
}

// Pending returns the creations not yet made, by creation time.
func (p *Provider) Pending() []PendingNode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PendingNode(nil), p.pending...)
}

// targetLocked counts registered nodes plus pending ones not yet
// registered; an entry whose Node exists (created, not yet forgotten)
// counts once.
func (p *Provider) targetLocked(name string, pending []PendingNode) int {
	n := len(p.registered[name])
	for _, pn := range pending {
		if pn.Group == name && !p.registered[name][pn.Name] {
			n++
		}
	}
	return n
}

func (p *Provider) group(name string) (*group, error) {
	g := p.groups[name]
	if g == nil {
		return nil, fmt.Errorf("kwok: node group %q: %w", name, cloudprovider.ErrNotFound)
	}
	return g, nil
}

// IncreaseSize records delta pending creations, due after the provisioning
// delay. The group's max is checked against the stored state, not only
// this process's view.
func (p *Provider) IncreaseSize(ctx context.Context, name string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("kwok: node group %s: size increase must be positive, got %d", name, delta)
	}
	g, err := p.group(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.faults.call(OpIncreaseSize, name); err != nil {
		return err
	}
	now := p.clock.Now()
	createAt := now.Add(p.cfg.ProvisioningDelay)
	next, err := p.store.update(ctx, func(pending []PendingNode) ([]PendingNode, error) {
		if target := p.targetLocked(name, pending); target+delta > g.cfg.MaxSize {
			return nil, fmt.Errorf("kwok: node group %s: target %d + %d would exceed maxSize %d", name, target, delta, g.cfg.MaxSize)
		}
		taken := p.namesLocked(pending)
		for i := 0; i < delta; i++ {
			pending = append(pending, PendingNode{Group: name, Name: uniqueName(name, taken), CreateAt: createAt, RequestedAt: now})
		}
		return pending, nil
	})
	if err != nil {
		return err
	}
	p.pending = next
	return nil
}

// namesLocked is every node name in use or promised.
func (p *Provider) namesLocked(pending []PendingNode) map[string]bool {
	taken := map[string]bool{}
	for _, names := range p.registered {
		for n := range names {
			taken[n] = true
		}
	}
	for _, pn := range pending {
		taken[pn.Name] = true
	}
	return taken
}

// uniqueName picks "<group>-<5 random characters>", as generateName would,
// but here, so the name can be stored before the Node exists.
func uniqueName(group string, taken map[string]bool) string {
	for {
		name := group + "-" + utilrand.String(5)
		if !taken[name] {
			taken[name] = true
			return name
		}
	}
}

// DecreaseTargetSize forgets delta pending creations, those due last
// first. It refuses to go below the registered nodes: that would need a
// deletion, which is DeleteNodes' job.
func (p *Provider) DecreaseTargetSize(ctx context.Context, name string, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("kwok: node group %s: size decrease must be positive, got %d", name, delta)
	}
	if _, err := p.group(name); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.faults.call(OpDecreaseTargetSize, name); err != nil {
		return err
	}
	next, err := p.store.update(ctx, func(pending []PendingNode) ([]PendingNode, error) {
		// Indexes of this group's entries, in due order, the failed ones
		// last: they go first.
		var mine, failed []int
		for i, pn := range pending {
			switch {
			case pn.Group != name || p.registered[name][pn.Name]:
			case pn.Failed:
				failed = append(failed, i)
			default:
				mine = append(mine, i)
			}
		}
		mine = append(mine, failed...)
		if delta > len(mine) {
			return nil, fmt.Errorf("kwok: node group %s: cannot decrease target by %d: only %d node(s) pending (target %d, registered %d)",
				name, delta, len(mine), p.targetLocked(name, pending), len(p.registered[name]))
		}
		drop := map[int]bool{}
		for _, i := range mine[len(mine)-delta:] {
			drop[i] = true
		}
		kept := pending[:0]
		for i, pn := range pending {
			if !drop[i] {
				kept = append(kept, pn)
			}
		}
		return kept, nil
	})
	if err != nil {
		return err
	}
	p.pending = next
	return nil
}

// DeleteNodes deletes the Node objects, and pending creations given by
// providerID alone (instances that never registered: Faults.NeverRegister).
// Every node must carry the group's label or be such an instance of the
// group, and the group must stay at or above its minimum; nothing is
// deleted otherwise. A node already gone counts as deleted.
func (p *Provider) DeleteNodes(ctx context.Context, name string, nodes []*v1.Node) error {
	g, err := p.group(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.faults.call(OpDeleteNodes, name); err != nil {
		return err
	}
	var registered []*v1.Node
	unregistered := map[string]bool{}
	for _, n := range nodes {
		if n == nil {
			return fmt.Errorf("kwok: node group %s: nil node", name)
		}
		got := n.Labels[LabelNodeGroup]
		switch {
		case got == name:
			registered = append(registered, n)
		case got == "" && p.pendingInstanceLocked(name, n.Spec.ProviderID):
			unregistered[strings.TrimPrefix(n.Spec.ProviderID, ProviderIDPrefix)] = true
		default:
			return fmt.Errorf("kwok: node %s belongs to node group %q, not %s: %w", n.Name, got, name, cloudprovider.ErrNotFound)
		}
	}
	if target := p.targetLocked(name, p.pending); target-len(nodes) < g.cfg.MinSize {
		return fmt.Errorf("kwok: node group %s: deleting %d node(s) would take target %d below minSize %d", name, len(nodes), target, g.cfg.MinSize)
	}
	var errs []error
	if len(unregistered) > 0 {
		next, err := p.store.update(ctx, func(pending []PendingNode) ([]PendingNode, error) {
			kept := pending[:0]
			for _, pn := range pending {
				if pn.Group != name || !unregistered[pn.Name] {
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
	for _, n := range registered {
		opts := metav1.DeleteOptions{}
		if n.UID != "" {
			// Never delete a different node that has since taken the name.
			opts.Preconditions = &metav1.Preconditions{UID: &n.UID}
		}
		err := p.client.CoreV1().Nodes().Delete(ctx, n.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kwok: deleting node %s: %w", n.Name, err))
			continue
		}
		delete(p.registered[name], n.Name)
	}
	return errors.Join(errs...)
}

// pendingInstanceLocked: providerID names a pending creation of group that
// has not registered.
func (p *Provider) pendingInstanceLocked(group, providerID string) bool {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok || p.registered[group][name] {
		return false
	}
	for _, pn := range p.pending {
		if pn.Group == group && pn.Name == name {
			return true
		}
	}
	return false
}
