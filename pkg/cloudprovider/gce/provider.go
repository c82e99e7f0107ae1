// Package gce is the cloud provider for Compute Engine managed instance
// groups and GKE node pools (--cloud-provider=gce). A node group is one
// zonal MIG, named by its instance-group URL, given with --nodes or found
// by name prefix in the configured zones.
//
// Each Refresh (at most once per refresh interval) lists the MIGs of every
// zone in play (one paginated instanceGroupManagers.list per zone), and
// each group's instances (listManagedInstances), which map nodes to groups
// by provider id and reveal instances the MIG cannot create. Instance
// templates are immutable, so a template is read once per URL; the machine
// type's shape and price come from a built-in table (machineTypes.get for
// types it lacks).
//
// Bad input never stops the groups that are fine: a malformed URL, a MIG
// that does not exist, or a template the provider cannot read leaves that
// group out, logged and listed by Problems, while the others are served.
// Transient API failures (429, 5xx), once the bounded retries are spent,
// fail the Refresh instead, so that no decision is made on stale sizes.
package gce

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	compute "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ProviderName is the --cloud-provider value.
const ProviderName = "gce"

// Defaults of Options.
const (
	DefaultRefreshInterval  = 10 * time.Second
	DefaultOperationTimeout = 2 * time.Minute
	DefaultCallTimeout      = time.Minute
)

// NodeGroupSpec is one --nodes value: bounds and an instance-group URL.
type NodeGroupSpec struct {
	Min, Max int
	URL      string
}

// DiscoverySpec is one mig:namePrefix=...,min=...,max=... value.
type DiscoverySpec struct {
	NamePrefix string
	Min, Max   int
}

// Options build a Provider.
type Options struct {
	// Service is the Compute Engine client.
	Service *compute.Service
	// Config is the parsed --cloud-config; nil means empty. Discovery
	// needs its Project and Zones.
	Config *Config
	// NodeGroups are the static groups; a bad URL is reported, not fatal.
	NodeGroups []NodeGroupSpec
	// AutoDiscovery selects groups by name prefix in Config.Zones; a group
	// also given in NodeGroups keeps the NodeGroups bounds.
	AutoDiscovery []DiscoverySpec
	// RefreshInterval is how long a Refresh's listing is reused
	// (DefaultRefreshInterval when 0). Sizes changed through the provider
	// are updated in place.
	RefreshInterval time.Duration
	// OperationTimeout bounds the wait for a resize or delete operation
	// (DefaultOperationTimeout when 0).
	OperationTimeout time.Duration
	// CallTimeout bounds each attempt of an API call other than the wait
	// for an operation (DefaultCallTimeout when 0): an endpoint that
	// stops answering fails the call, not the loop.
	CallTimeout time.Duration
	// Retry bounds the retries of transient API failures.
	Retry RetryOptions
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// GroupProblem is a group, or an input meant to name one, that is not
// served, and why.
type GroupProblem struct {
	// Group is the instance-group URL, or the input as given.
	Group string
	Err   error
}

// Error says what is wrong with the group; Err names it already.
func (g GroupProblem) Error() string { return g.Err.Error() }

// Unwrap returns Err.
func (g GroupProblem) Unwrap() error { return g.Err }

// group is one served MIG as of the last refresh.
type group struct {
	ref      MIGRef
	min, max int
	target   int
	shape    nodeShape
	node     *v1.Node
	// templateURL keys the shape cache.
	templateURL string
	// pending are the instances being created, failed ones first, then
	// by name: what DecreaseTargetSize deletes.
	pending []pendingInstance
	// instances are every named instance of the group, by name, for the
	// core (instances.go).
	instances []snapshot.Instance
	// options are the group's nodeGroupOptions entry; nil for none.
	options *snapshot.GroupOptions
	// queued are the resize requests of a group with queued
	// provisioning, by name.
	queued []snapshot.QueuedRequest
}

// pendingInstance is an instance the MIG is creating.
type pendingInstance struct {
	ref    InstanceRef
	failed bool
}

// Provider implements cloudprovider.CloudProvider and
// cloudprovider.CreationFailureReporter for MIGs. It is safe for
// concurrent use: reads never wait on the network, changes of one group
// run one at a time, and changes of different groups and a refresh run
// side by side.
type Provider struct {
	api      *api
	clock    clock.Clock
	log      *slog.Logger
	cfg      Config
	interval time.Duration
	static   map[MIGRef]NodeGroupSpec
	discover []DiscoverySpec
	// badInputs are static groups whose URL does not parse.
	badInputs []GroupProblem

	// Locking keeps reads off the network. refreshing serialises
	// refreshes and is held across their API calls; shapes and machines
	// belong to it. changing serialises the changes of each group and is
	// held across their API calls. mu guards everything below it and is
	// never held across an API call, so NodeGroups, NodeGroupForNode and
	// FailedCreations answer while a slow operation runs.
	refreshing ctxMutex
	changing   keyedMutex
	shapes     map[string]nodeShape
	machines   map[string]MachineType

	mu          sync.RWMutex
	groups      map[string]*group
	order       []string
	instances   map[InstanceRef]string
	problems    []GroupProblem
	lastRefresh time.Time
	failures    failureTracker
	// changes counts the starts and ends of group changes; changedAt is
	// the count at a group's latest one and running the changes of a
	// group under way. A refresh compares them with the count at its
	// start to tell a listing that may predate the provider's own change.
	changes   uint64
	changedAt map[string]uint64
	running   map[string]int
	// stale makes the next Refresh reload before the interval is up: a
	// change failed, or a listing raced a change.
	stale bool
}

var (
	_ cloudprovider.CloudProvider           = (*Provider)(nil)
	_ cloudprovider.CreationFailureReporter = (*Provider)(nil)
)

// New checks the options and parses the group URLs; it makes no API call
// (Refresh does). Bad URLs are logged and kept as problems as long as
// something else is left to serve.
func New(opts Options) (*Provider, error) {
	if opts.Service == nil {
		return nil, errors.New("gce: a compute service is required")
	}
	if opts.RefreshInterval < 0 || opts.OperationTimeout < 0 || opts.CallTimeout < 0 {
		return nil, fmt.Errorf("gce: refresh interval (%s), operation timeout (%s) and call timeout (%s) must not be negative",
			opts.RefreshInterval, opts.OperationTimeout, opts.CallTimeout)
	}
	p := &Provider{
		clock: opts.Clock, log: opts.Logger, interval: opts.RefreshInterval,
		static: map[MIGRef]NodeGroupSpec{}, discover: opts.AutoDiscovery,
		groups: map[string]*group{}, instances: map[InstanceRef]string{},
		shapes: map[string]nodeShape{}, machines: map[string]MachineType{},
		refreshing: newCtxMutex(), changedAt: map[string]uint64{}, running: map[string]int{},
	}
	if opts.Config != nil {
		if err := opts.Config.Validate(); err != nil {
			return nil, fmt.Errorf("gce: cloud config: %w", err)
		}
		p.cfg = *opts.Config
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.interval == 0 {
		p.interval = DefaultRefreshInterval
	}
	timeout := opts.OperationTimeout
	if timeout == 0 {
		timeout = DefaultOperationTimeout
	}
	callTimeout := opts.CallTimeout
	if callTimeout == 0 {
		callTimeout = DefaultCallTimeout
	}
	p.api = &api{svc: opts.Service, retry: opts.Retry.withDefaults(), clock: p.clock, opTimeout: timeout, callTimeout: callTimeout}
	for _, d := range opts.AutoDiscovery {
		switch {
		case d.NamePrefix == "" || d.Min < 0 || d.Max < d.Min:
			return nil, fmt.Errorf("gce: auto-discovery mig:namePrefix=%s,min=%d,max=%d: want a prefix and 0 <= min <= max", d.NamePrefix, d.Min, d.Max)
		case p.cfg.Project == "" || len(p.cfg.Zones) == 0:
			return nil, fmt.Errorf("gce: auto-discovery mig:namePrefix=%s needs a project and zones (cloud config or metadata server)", d.NamePrefix)
		}
	}
	for _, s := range opts.NodeGroups {
		ref, err := ParseMIGURL(s.URL)
		switch {
		case err != nil:
			p.badInputs = append(p.badInputs, GroupProblem{Group: s.URL, Err: fmt.Errorf("--nodes: %w", err)})
		case s.Min < 0 || s.Max < s.Min:
			p.badInputs = append(p.badInputs, GroupProblem{Group: s.URL, Err: fmt.Errorf("--nodes %d:%d:%s: want 0 <= min <= max", s.Min, s.Max, s.URL)})
		default:
			p.static[ref] = s
		}
	}
	for _, b := range p.badInputs {
		p.log.Error("node group left out", "group", b.Group, "err", b.Err)
	}
	if len(p.static) == 0 && len(p.discover) == 0 {
		if len(p.badInputs) > 0 {
			return nil, fmt.Errorf("gce: no valid node group: %w", p.badInputs[0].Err)
		}
		return nil, errors.New("gce: no node groups: give --nodes=MIN:MAX:URL or --node-group-auto-discovery=mig:namePrefix=PREFIX,min=MIN,max=MAX")
	}
	p.problems = p.badInputs
	return p, nil
}

// Name is "gce".
func (p *Provider) Name() string { return ProviderName }

// NodeGroups returns the served groups, sorted by URL, with their
// templates.
func (p *Provider) NodeGroups() []snapshot.NodeGroup {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]snapshot.NodeGroup, 0, len(p.order))
	for _, id := range p.order {
		g := p.groups[id]
		out = append(out, snapshot.NodeGroup{
			ID: id, MinSize: g.min, MaxSize: g.max, TargetSize: g.target,
			Template: g.node.DeepCopy(), InstanceType: g.shape.MachineType,
			PricePerHour: g.shape.Price, Spot: g.shape.Spot, TemplateSlices: g.shape.slices(g.node),
			Instances: append([]snapshot.Instance(nil), g.instances...), InstancesListed: true, Options: g.options,
			Queued: slices.Clone(g.queued),
		})
	}
	return out
}

// NodeGroupForNode maps the node's provider id to the group that listed
// the instance; "" for nodes of no served group or without a provider id.
func (p *Provider) NodeGroupForNode(node *v1.Node) (string, error) {
	if node == nil {
		return "", errors.New("gce: nil node")
	}
	if node.Spec.ProviderID == "" {
		return "", nil
	}
	ref, err := ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return "", fmt.Errorf("gce: node %s: %w", node.Name, err)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.instances[ref], nil
}

// Problems lists the groups left out, sorted by group, as of the last
// refresh (bad URLs from the start), each a GroupProblem: the same
// signature as the AWS provider's.
func (p *Provider) Problems() []error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]error, len(p.problems))
	for i, gp := range p.problems {
		out[i] = gp
	}
	return out
}

// FailedCreations returns the instance creations that failed since the
// last call, each failure once.
func (p *Provider) FailedCreations() []cloudprovider.FailedCreations {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures.take()
}

// groupLocked returns a served group or an error wrapping ErrNotFound.
func (p *Provider) groupLocked(id string) (*group, error) {
	g := p.groups[id]
	if g == nil {
		return nil, fmt.Errorf("gce: node group %s: %w", id, cloudprovider.ErrNotFound)
	}
	return g, nil
}

func sortProblems(ps []GroupProblem) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Group < ps[j].Group })
}
