// Package aws is the cloud provider for Amazon EC2 Auto Scaling groups
// (--cloud-provider=aws), EKS managed and self-managed node groups alike.
//
// A node group is an Auto Scaling group: named with --nodes=min:max:name
// or found by tags with --node-group-auto-discovery=asg:tag=k1,k2=v2. Its
// size is the group's desired capacity; a node belongs to it when the
// instance id in its providerID (aws:///<zone>/<instance-id>) is one of the
// group's instances. The template for scale-up from zero comes from the
// instance type of the launch template, the launch configuration, or the
// first override of a mixed instances policy, looked up in a built-in
// instance type table and overridden by the group's node-template tags.
//
// The provider calls only DescribeAutoScalingGroups,
// DescribeAutoScalingInstances, DescribeLaunchConfigurations,
// SetDesiredCapacity, TerminateInstanceInAutoScalingGroup,
// ec2:DescribeLaunchTemplateVersions, ec2:DescribeCapacityReservations (for
// groups launched into a capacity block) and, where the role allows it,
// DescribeScalingActivities (activities.go); with an interruption queue,
// sqs:GetQueueUrl, sqs:ReceiveMessage and sqs:DeleteMessage
// (interruptionqueue.go). Throttling and server errors are
// retried by the SDK's retryer of the clients it is given.
//
// Bad input never stops the valid groups: a group that does not exist, a
// malformed name, an unreadable tag or a launch template without an
// instance type is reported by Problems and logged at each reload, while
// every other group is served.
package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ProviderName is the --cloud-provider value.
const ProviderName = "aws"

// AutoScalingAPI is the part of the Auto Scaling client the provider uses;
// *autoscaling.Client implements it.
type AutoScalingAPI interface {
	DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	DescribeAutoScalingInstances(context.Context, *autoscaling.DescribeAutoScalingInstancesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
	DescribeLaunchConfigurations(context.Context, *autoscaling.DescribeLaunchConfigurationsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeLaunchConfigurationsOutput, error)
	SetDesiredCapacity(context.Context, *autoscaling.SetDesiredCapacityInput, ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error)
	TerminateInstanceInAutoScalingGroup(context.Context, *autoscaling.TerminateInstanceInAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
	// DescribeScalingActivities is optional in the role: without it
	// failed launches wait for the provisioning timeout.
	DescribeScalingActivities(context.Context, *autoscaling.DescribeScalingActivitiesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeScalingActivitiesOutput, error)
}

// EC2API is the part of the EC2 client the provider uses; *ec2.Client
// implements it.
type EC2API interface {
	DescribeLaunchTemplateVersions(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
	// DescribeCapacityReservations reads the end of the capacity blocks
	// that launch templates target (capacityblock.go).
	DescribeCapacityReservations(context.Context, *ec2.DescribeCapacityReservationsInput, ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
}

// GroupSpec is one --nodes value: the group's bounds win over the Auto
// Scaling group's own.
type GroupSpec struct {
	Name             string
	MinSize, MaxSize int
}

// Options build a Provider.
type Options struct {
	AutoScaling AutoScalingAPI
	EC2         EC2API
	// Groups are named groups (--nodes).
	Groups []GroupSpec
	// AutoDiscovery are tag sets (--node-group-auto-discovery=asg:tag=...):
	// a group is discovered when it has every key of one set, with the
	// given value where the value is not empty.
	AutoDiscovery []map[string]string
	// Region fills the template's region label; when empty it is the
	// zone without its last letter.
	Region string
	// RefreshInterval is the cache lifetime (DefaultRefreshInterval when 0).
	RefreshInterval time.Duration
	// CallTimeout bounds each call to AWS, its retries included
	// (DefaultCallTimeout when 0).
	CallTimeout time.Duration
	Prices      Prices
	// InterruptionQueue, when set, is read at each Refresh
	// (interruptionqueue.go).
	InterruptionQueue InterruptionQueue
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
	// Logger receives the problems of each reload; nil means slog.Default().
	Logger *slog.Logger
}

// InterruptionQueue is the SQS queue EventBridge sends EC2 interruption
// events to (--aws-interruption-queue).
type InterruptionQueue struct {
	API InterruptionQueueAPI
	// Queue is the queue's name or URL.
	Queue string
}

// Provider implements cloudprovider.CloudProvider over Auto Scaling groups.
// It is safe for concurrent use.
type Provider struct {
	as       AutoScalingAPI
	ec2      EC2API
	opts     Options
	clock    clock.PassiveClock
	log      *slog.Logger
	interval time.Duration

	// opMu serialises operations that call AWS, so the cache and the
	// groups change one operation at a time; mu guards the cache itself
	// and is never held across a call.
	opMu sync.Mutex
	mu   sync.Mutex
	// groups are the served groups by name; order is their sorted names.
	groups map[string]*group
	order  []string
	// owner maps instance ids to group names.
	owner map[string]string
	// unknown are instance ids of nodes not in the cache, looked up with
	// DescribeAutoScalingInstances at the next Refresh; foreign are ids
	// known to belong to no served group, until the next reload.
	unknown, foreign map[string]bool
	// registered are the instance ids of nodes seen by NodeGroupForNode
	// since the last Refresh: instances that must never be taken back as
	// "never registered".
	registered map[string]bool
	problems   []error
	lastReload time.Time
	stale      bool
	// acts is what the scaling activities told (activities.go).
	acts activityState
	// interruptions are the interruption queue's events not yet taken by
	// Interruptions; queueURLCache the queue's URL once looked up.
	interruptions []cloudprovider.NodeInterruption
	queueURLCache string
	timeout       time.Duration
}

var (
	_ cloudprovider.CloudProvider           = (*Provider)(nil)
	_ cloudprovider.InterruptionReporter    = (*Provider)(nil)
	_ cloudprovider.CreationFailureReporter = (*Provider)(nil)
)

// New validates the options; it makes no API call (Refresh does).
func New(opts Options) (*Provider, error) {
	switch {
	case opts.AutoScaling == nil:
		return nil, errors.New("aws: an Auto Scaling client is required")
	case opts.EC2 == nil:
		return nil, errors.New("aws: an EC2 client is required")
	case len(opts.Groups) == 0 && len(opts.AutoDiscovery) == 0:
		return nil, errors.New("aws: no node groups: give --nodes=min:max:<asg-name> or --node-group-auto-discovery=asg:tag=<key>[=<value>][,<key>[=<value>]]")
	case opts.RefreshInterval < 0:
		return nil, fmt.Errorf("aws: refresh interval must not be negative, got %s", opts.RefreshInterval)
	case opts.CallTimeout < 0:
		return nil, fmt.Errorf("aws: call timeout must not be negative, got %s", opts.CallTimeout)
	}
	for i, tags := range opts.AutoDiscovery {
		if len(tags) == 0 {
			return nil, fmt.Errorf("aws: auto-discovery %d: no tags", i)
		}
	}
	timeout := opts.CallTimeout
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	p := &Provider{
		as: timedAutoScaling{opts.AutoScaling, timeout}, ec2: timedEC2{opts.EC2, timeout}, timeout: timeout, opts: opts, clock: opts.Clock, log: opts.Logger,
		interval: opts.RefreshInterval, groups: map[string]*group{}, owner: map[string]string{},
		unknown: map[string]bool{}, foreign: map[string]bool{}, registered: map[string]bool{},
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
	return p, nil
}

// Name is "aws".
func (p *Provider) Name() string { return ProviderName }

// Refresh reloads every group, its instances and its template when the
// cache is older than the refresh interval or an earlier call failed;
// otherwise it only looks up the instances of nodes it did not know. It
// returns an error only when AWS could not be read at all; problems with
// single groups go to Problems and the log.
func (p *Provider) Refresh(ctx context.Context) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.mu.Lock()
	due := p.stale || p.lastReload.IsZero() || p.clock.Since(p.lastReload) >= p.interval
	unknown := sortedKeys(p.unknown)
	p.registered = map[string]bool{}
	p.mu.Unlock()
	p.readInterruptionQueue(ctx)
	if due {
		if err := p.reload(ctx); err != nil {
			return err
		}
		p.readActivities(ctx)
		return nil
	}
	defer p.readActivities(ctx)
	if len(unknown) == 0 {
		return nil
	}
	owners, err := p.describeInstances(ctx, unknown)
	if err != nil {
		return fmt.Errorf("aws: refresh: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range unknown {
		delete(p.unknown, id)
		inst, ok := owners[id]
		if g := p.groups[inst.group]; ok && g != nil {
			g.instances[id] = inst
			p.owner[id] = g.name
		} else {
			p.foreign[id] = true
		}
	}
	return nil
}

// Problems are the errors of the last reload, one per bad group, tag or
// name, sorted; the groups they name are served without a template or not
// at all, as each says.
func (p *Provider) Problems() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.problems...)
}

// NodeGroups returns the served groups, sorted by name.
func (p *Provider) NodeGroups() []snapshot.NodeGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]snapshot.NodeGroup, 0, len(p.order))
	for _, name := range p.order {
		g := p.groups[name]
		ng := snapshot.NodeGroup{
			ID: g.name, MinSize: g.minSize, MaxSize: g.maxSize, TargetSize: g.desired,
			InstanceType: g.instanceType, PricePerHour: g.price, Spot: g.spot,
			Instances: g.snapshotInstances(), InstancesListed: true, Options: g.options,
		}
		if g.template != nil {
			ng.Template = g.template.DeepCopy()
			for _, sl := range g.templateSlices {
				ng.TemplateSlices = append(ng.TemplateSlices, sl.DeepCopy())
			}
		}
		out = append(out, ng)
	}
	return out
}

// NodeGroupForNode maps the node's providerID to its group. Nodes that are
// not EC2 instances, and instances of no served group, are unmanaged ("");
// an instance not yet in the cache is unmanaged until the next Refresh
// looks it up.
func (p *Provider) NodeGroupForNode(node *v1.Node) (string, error) {
	if node == nil {
		return "", errors.New("aws: nil node")
	}
	id, err := InstanceID(node.Spec.ProviderID)
	if err != nil {
		return "", nil // not an EC2 instance: Fargate, another cloud, no providerID yet
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.registered[id] = true
	if name, ok := p.owner[id]; ok {
		return name, nil
	}
	if !p.foreign[id] {
		p.unknown[id] = true
	}
	return "", nil
}

// InstanceID reads the instance id of an EC2 providerID,
// aws:///<zone>/<instance-id>.
func InstanceID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws://")
	if !ok {
		return "", fmt.Errorf("providerID %q: want aws:///<zone>/<instance-id>", providerID)
	}
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !validInstanceID(id) {
		return "", fmt.Errorf("providerID %q: %q is not an EC2 instance id (i- and hexadecimal digits)", providerID, id)
	}
	return id, nil
}

func validInstanceID(id string) bool {
	hex, ok := strings.CutPrefix(id, "i-")
	if !ok || len(hex) < 8 || len(hex) > 17 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// lookup returns a copy of a served group's sizes and instances.
func (p *Provider) lookup(name string) (group, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[name]
	if g == nil {
		return group{}, fmt.Errorf("aws: node group %q: %w", name, cloudprovider.ErrNotFound)
	}
	return g.copy(), nil
}

// markStale makes the next Refresh reload everything: after a failed
// change the cache may no longer say what AWS holds.
func (p *Provider) markStale() {
	p.mu.Lock()
	p.stale = true
	p.mu.Unlock()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
