package aws

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Page and batch sizes the Auto Scaling API accepts.
const (
	groupsPerPage    = 100
	namesPerCall     = 50
	instancesPerCall = 50
)

// group is one served Auto Scaling group as of the last reload, updated by
// the provider's own changes.
type group struct {
	name                      string
	minSize, maxSize, desired int
	// instances are the group's instances by id.
	instances map[string]instance
	zones     []string
	tags      map[string]string
	launch    launchSource

	instanceType   string
	template       *v1.Node
	templateSlices []*resourceapi.ResourceSlice
	price          float64
	spot           bool
	// options are the group's autoscaling-options tags, parsed; nil when
	// it has none (or a bad one, reported as a problem).
	options *snapshot.GroupOptions
	// block is the capacity block the launch template targets, and
	// blockEnd its end as EC2 gave it (capacityblock.go).
	block    blockTarget
	blockEnd *time.Time
	// launched are launch times of instances, as the group's scaling
	// activities tell them (activities.go).
	launched map[string]time.Time
}

// instance is one member of a group.
type instance struct {
	id, group, zone string
	// lifecycle is the Auto Scaling lifecycle state (Pending, InService, ...).
	lifecycle string
}

// pending reports whether the instance has not reached InService: it was
// asked for and is still being launched.
func (i instance) pending() bool {
	return strings.HasPrefix(i.lifecycle, string(astypes.LifecycleStatePending))
}

func (g *group) copy() group {
	c := *g
	c.instances = maps.Clone(g.instances)
	c.launched = maps.Clone(g.launched)
	return c
}

// newGroup reads an Auto Scaling group; the template is added later.
func newGroup(asg astypes.AutoScalingGroup) *group {
	g := &group{
		name:    ptr.Deref(asg.AutoScalingGroupName, ""),
		minSize: int(ptr.Deref(asg.MinSize, 0)), maxSize: int(ptr.Deref(asg.MaxSize, 0)),
		desired:   int(ptr.Deref(asg.DesiredCapacity, 0)),
		instances: map[string]instance{}, tags: map[string]string{},
		zones: append([]string(nil), asg.AvailabilityZones...), launch: launchSourceOf(asg),
	}
	sort.Strings(g.zones)
	for _, i := range asg.Instances {
		id := ptr.Deref(i.InstanceId, "")
		g.instances[id] = instance{id: id, group: g.name, zone: ptr.Deref(i.AvailabilityZone, ""), lifecycle: string(i.LifecycleState)}
	}
	for _, t := range asg.Tags {
		g.tags[ptr.Deref(t.Key, "")] = ptr.Deref(t.Value, "")
	}
	return g
}

// reload replaces the cache: named groups, discovered groups, their
// instances and templates. A call that fails leaves the cache as it was.
func (p *Provider) reload(ctx context.Context) error {
	var problems []error
	found := map[string]astypes.AutoScalingGroup{}
	var names []string
	bounds := map[string]GroupSpec{}
	for _, s := range p.opts.Groups {
		if err := validateGroupName(s.Name); err != nil {
			problems = append(problems, fmt.Errorf("aws: --nodes group %q: %w; not served", s.Name, err))
			continue
		}
		names = append(names, s.Name)
		bounds[s.Name] = s
	}
	named, err := p.describeByNames(ctx, names)
	if err != nil {
		return fmt.Errorf("aws: refresh: --nodes groups %s: %w", strings.Join(names, ","), err)
	}
	for _, n := range names {
		asg, ok := named[n]
		if !ok {
			problems = append(problems, fmt.Errorf("aws: --nodes group %q: Auto Scaling group not found in this account and region; not served", n))
			continue
		}
		found[n] = asg
	}
	for _, tags := range p.opts.AutoDiscovery {
		asgs, err := p.describeByTags(ctx, tags)
		if err != nil {
			return fmt.Errorf("aws: refresh: auto-discovery %s: %w", formatTags(tags), err)
		}
		for _, asg := range asgs {
			if n := ptr.Deref(asg.AutoScalingGroupName, ""); n != "" {
				if _, dup := found[n]; !dup {
					found[n] = asg
				}
			}
		}
	}
	groups := make(map[string]*group, len(found))
	for name, asg := range found {
		g := newGroup(asg)
		if b, ok := bounds[name]; ok {
			g.minSize, g.maxSize = b.MinSize, b.MaxSize
		}
		if err := p.readOptions(g); err != nil {
			problems = append(problems, err)
		}
		g.keepLaunchTimes(p.cached(name))
		groups[name] = g
	}
	problems = append(problems, p.addTemplates(ctx, groups)...)
	problems = append(problems, p.addCapacityBlockEnds(ctx, groups)...)
	p.install(groups, problems)
	return nil
}

// install swaps the new groups in and reports the problems.
func (p *Provider) install(groups map[string]*group, problems []error) {
	sort.Slice(problems, func(i, j int) bool { return problems[i].Error() < problems[j].Error() })
	owner := map[string]string{}
	for name, g := range groups {
		for id := range g.instances {
			owner[id] = name
		}
	}
	p.mu.Lock()
	p.groups, p.order, p.owner = groups, sortedKeys(groups), owner
	p.unknown, p.foreign = map[string]bool{}, map[string]bool{}
	p.problems = problems
	p.lastReload, p.stale = p.clock.Now(), false
	p.mu.Unlock()
	for _, err := range problems {
		p.log.Warn("aws node group problem", "err", err)
	}
}

// validateGroupName refuses names the Auto Scaling API cannot hold: empty,
// over 255 characters, with control characters, with surrounding spaces,
// or an ARN where a name is wanted.
func validateGroupName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name is empty")
	case len(name) > 255:
		return fmt.Errorf("name is %d characters long, the most is 255", len(name))
	case strings.HasPrefix(name, "arn:"):
		return fmt.Errorf("give the Auto Scaling group's name, not its ARN")
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("name has leading or trailing spaces")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("name has control characters")
	}
	return nil
}

// describeByNames describes the named groups, fifty names a call, every
// page; groups that do not exist are simply absent.
func (p *Provider) describeByNames(ctx context.Context, names []string) (map[string]astypes.AutoScalingGroup, error) {
	out := map[string]astypes.AutoScalingGroup{}
	for start := 0; start < len(names); start += namesPerCall {
		batch := names[start:min(start+namesPerCall, len(names))]
		in := &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: batch, MaxRecords: ptr.To[int32](groupsPerPage)}
		asgs, err := p.describeGroups(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, a := range asgs {
			out[ptr.Deref(a.AutoScalingGroupName, "")] = a
		}
	}
	return out, nil
}

// describeByTags finds the groups carrying every tag: a key alone matches
// any value. The filters are sorted by key so the calls are reproducible.
func (p *Provider) describeByTags(ctx context.Context, tags map[string]string) ([]astypes.AutoScalingGroup, error) {
	var filters []astypes.Filter
	for _, k := range sortedKeys(tags) {
		if v := tags[k]; v != "" {
			filters = append(filters, astypes.Filter{Name: ptr.To("tag:" + k), Values: []string{v}})
		} else {
			filters = append(filters, astypes.Filter{Name: ptr.To("tag-key"), Values: []string{k}})
		}
	}
	return p.describeGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{Filters: filters, MaxRecords: ptr.To[int32](groupsPerPage)})
}

func (p *Provider) describeGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput) ([]astypes.AutoScalingGroup, error) {
	var out []astypes.AutoScalingGroup
	pages := autoscaling.NewDescribeAutoScalingGroupsPaginator(p.as, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeAutoScalingGroups: %w", err)
		}
		out = append(out, page.AutoScalingGroups...)
	}
	return out, nil
}

// describeInstances finds the groups of instances, fifty ids a call; ids
// in no Auto Scaling group are absent from the result.
func (p *Provider) describeInstances(ctx context.Context, ids []string) (map[string]instance, error) {
	out := map[string]instance{}
	for start := 0; start < len(ids); start += instancesPerCall {
		batch := ids[start:min(start+instancesPerCall, len(ids))]
		in := &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: batch, MaxRecords: ptr.To[int32](instancesPerCall)}
		pages := autoscaling.NewDescribeAutoScalingInstancesPaginator(p.as, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeAutoScalingInstances %s: %w", strings.Join(batch, ","), err)
			}
			for _, i := range page.AutoScalingInstances {
				id := ptr.Deref(i.InstanceId, "")
				out[id] = instance{id: id, group: ptr.Deref(i.AutoScalingGroupName, ""),
					zone: ptr.Deref(i.AvailabilityZone, ""), lifecycle: ptr.Deref(i.LifecycleState, "")}
			}
		}
	}
	return out, nil
}

func formatTags(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		if v := tags[k]; v != "" {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, k)
		}
	}
	return "asg:tag=" + strings.Join(parts, ",")
}
