package aws

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Scaling activities tell at once what DescribeAutoScalingGroups only shows
// as a desired capacity that never fills: a launch that failed (no capacity
// of the instance type in the zone, a vCPU quota, a bad launch template).
// The provider reads a group's recent activities while it has capacity not
// launched or instances pending, and reports a failed launch through
// cloudprovider.CreationFailureReporter, so the loop backs the group off and
// turns to the next one in the same loop instead of after
// --max-node-provision-time. Launch activities also date the instances
// they started.
//
// autoscaling:DescribeScalingActivities is optional. The first Refresh
// probes it; when the role lacks it the provider says so once and never
// calls it again, and failed launches are found by the provisioning timeout
// as before.

// activityAccess is what the provider knows of its permission.
type activityAccess uint8

const (
	accessUnknown activityAccess = iota
	accessAllowed
	accessDenied
)

// activitiesPerCall is enough to find the latest launch of a group.
const activitiesPerCall = 20

// launchPrefix starts the description of every launch activity; a
// successful or running one goes on ": i-...".
const launchPrefix = "Launching a new EC2 instance"

// activityState is the provider's memory of scaling activities.
type activityState struct {
	access activityAccess
	// reported are the ids of failed launches already handled.
	reported map[string]bool
	// failed are the failures not yet taken by FailedCreations.
	failed []cloudprovider.FailedCreations
}

// FailedCreations returns the failed launches found since the last call,
// each once.
func (p *Provider) FailedCreations() []cloudprovider.FailedCreations {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.acts.failed
	p.acts.failed = nil
	return out
}

// readActivities runs at the end of Refresh (opMu held): the groups with
// capacity not launched or instances pending read their activities; the
// first call probes the permission with the first group whatever its
// state.
func (p *Provider) readActivities(ctx context.Context) {
	p.mu.Lock()
	access := p.acts.access
	var todo []group
	for _, name := range p.order {
		g := p.groups[name]
		if access == accessUnknown && len(todo) == 0 || g.launching() {
			todo = append(todo, g.copy())
		}
	}
	p.mu.Unlock()
	if access == accessDenied {
		return
	}
	for _, g := range todo {
		acts, err := p.describeActivities(ctx, g.name)
		if err != nil {
			if deniedError(err) {
				p.setAccess(accessDenied)
				p.log.Warn("aws: the role may not call autoscaling:DescribeScalingActivities: failed launches (no capacity, quotas) are found only after --max-node-provision-time; "+
					"add the permission to see them in one loop", "err", err)
				return
			}
			p.log.Debug("aws: reading scaling activities failed; trying again next loop", "group", g.name, "err", err)
			continue
		}
		if p.setAccess(accessAllowed) {
			p.log.Info("aws: reading scaling activities: failed launches are seen in one loop")
		}
		p.applyActivities(ctx, g, acts)
	}
}

// setAccess records the permission and reports whether it changed.
func (p *Provider) setAccess(a activityAccess) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := p.acts.access != a
	p.acts.access = a
	return changed
}

// launching: the group has capacity not launched, or instances pending.
func (g *group) launching() bool {
	for _, inst := range g.instances {
		if inst.pending() {
			return true
		}
	}
	return g.desired > liveInstances(g)
}

func (p *Provider) describeActivities(ctx context.Context, name string) ([]astypes.Activity, error) {
	out, err := p.as.DescribeScalingActivities(ctx, &autoscaling.DescribeScalingActivitiesInput{
		AutoScalingGroupName: ptr.To(name), MaxRecords: ptr.To[int32](activitiesPerCall),
	})
	if err != nil {
		return nil, err
	}
	return out.Activities, nil
}

// applyActivities dates launched instances and reports the group's latest
// launch when it failed, once, for the capacity still not launched as the
// group stands now (read afresh: the cache may not hold the instances that
// launched since its last reload).
func (p *Provider) applyActivities(ctx context.Context, g group, acts []astypes.Activity) {
	var latest *astypes.Activity
	for i := range acts {
		a := &acts[i]
		desc := ptr.Deref(a.Description, "")
		if !strings.HasPrefix(desc, launchPrefix) {
			continue
		}
		if latest == nil || ptr.Deref(a.StartTime, time.Time{}).After(ptr.Deref(latest.StartTime, time.Time{})) {
			latest = a
		}
		if id, ok := strings.CutPrefix(desc, launchPrefix+": "); ok && a.StartTime != nil && validInstanceID(id) {
			p.update(g.name, func(c *group) {
				if _, known := c.instances[id]; known {
					c.setLaunched(id, a.StartTime.UTC())
				}
			})
		}
	}
	if latest == nil || !failedActivity(latest.StatusCode) {
		return
	}
	id := ptr.Deref(latest.ActivityId, "")
	p.mu.Lock()
	done := p.acts.reported[id]
	p.mu.Unlock()
	if done {
		return
	}
	found, err := p.describeByNames(ctx, []string{g.name})
	if err != nil {
		p.log.Debug("aws: reading a group after a failed launch failed; trying again next loop", "group", g.name, "err", err)
		return
	}
	fresh, ok := found[g.name]
	if !ok {
		return
	}
	now := newGroup(fresh)
	gap := now.desired - liveInstances(now)
	msg := ptr.Deref(latest.StatusMessage, "")
	class, code := classifyLaunchFailure(msg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.acts.reported == nil {
		p.acts.reported = map[string]bool{}
	}
	p.acts.reported[id] = true
	if gap <= 0 {
		return // the group has filled since: nothing is missing
	}
	p.acts.failed = append(p.acts.failed, cloudprovider.FailedCreations{
		Group: g.name, Count: gap, Class: class, Code: code, Message: msg, Zone: zoneOf(msg),
	})
}

func liveInstances(g *group) int {
	n := 0
	for _, inst := range g.instances {
		if st, ok := instanceState(inst.lifecycle); ok && st != snapshot.InstanceDeleting {
			n++
		}
	}
	return n
}

// failedActivity: the activity ended without launching its instance.
func failedActivity(c astypes.ScalingActivityStatusCode) bool {
	return c == astypes.ScalingActivityStatusCodeFailed || c == astypes.ScalingActivityStatusCodeCancelled
}

// deniedError: the role lacks the permission (an answer about the caller,
// not a failed call; asking again will not help).
func deniedError(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess":
		return true
	}
	return false
}

// Error codes of failed launches, by class, as EC2 words them in the
// activity's status message ("Could not launch On-Demand Instances.
// InsufficientInstanceCapacity - We currently do not have sufficient ...").
var (
	outOfCapacityCodes = []string{"InsufficientInstanceCapacity", "InsufficientCapacity", "UnfulfillableCapacity",
		"InsufficientHostCapacity", "InsufficientReservedInstanceCapacity", "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded"}
	quotaCodes = []string{"VcpuLimitExceeded", "InstanceLimitExceeded", "InsufficientAddressCapacity",
		"VolumeLimitExceeded", "AddressLimitExceeded"}
	codeInMessage = regexp.MustCompile(`\b([A-Z][A-Za-z]+(?:\.[A-Za-z]+)?) - `)
	// zoneInMessage finds the zone EC2 names in a capacity error ("... in
	// the Availability Zone you requested (us-east-1a)."): an Auto Scaling
	// group spans zones, and the stockout is in one of them.
	zoneInMessage = regexp.MustCompile(`Availability Zone[^(]*\(([a-z]{2}(?:-[a-z]+)+-[0-9]+[a-z])\)`)
)

// zoneOf is the zone a failed launch's message names, "" when none.
func zoneOf(msg string) string {
	if m := zoneInMessage.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// classifyLaunchFailure gives a failed launch's class and EC2 error code
// ("" when the message names none).
func classifyLaunchFailure(msg string) (class, code string) {
	for _, c := range outOfCapacityCodes {
		if strings.Contains(msg, c) {
			return cloudprovider.ErrorOutOfResources, c
		}
	}
	for _, c := range quotaCodes {
		if strings.Contains(msg, c) {
			return cloudprovider.ErrorQuota, c
		}
	}
	if m := codeInMessage.FindStringSubmatch(msg); m != nil {
		code = m[1]
	}
	if strings.Contains(strings.ToLower(msg), "insufficient capacity") {
		return cloudprovider.ErrorOutOfResources, code
	}
	return cloudprovider.ErrorOther, code
}
