package aws

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// dispatch answers one action with the inside of its result element.
func (f *fakeAWS) dispatch(action string, p url.Values) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch action {
	case "DescribeAutoScalingGroups":
		return f.describeGroups(p)
	case "DescribeAutoScalingInstances":
		return f.describeInstances(p)
	case "DescribeLaunchConfigurations":
		return f.describeLaunchConfigurations(p)
	case "SetDesiredCapacity":
		return f.setDesiredCapacity(p)
	case "TerminateInstanceInAutoScalingGroup":
		return f.terminate(p)
	case "DescribeLaunchTemplateVersions":
		return f.describeLaunchTemplateVersions(p)
	case "DescribeScalingActivities":
		return f.describeScalingActivities(p)
	case "DescribeCapacityReservations":
		return f.describeCapacityReservations(p)
	}
	return "", apiError{"InvalidAction", "the fake does not serve " + action}
}

func (f *fakeAWS) sortedGroups() []*fakeASG {
	out := make([]*fakeASG, 0, len(f.groups))
	for _, g := range f.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (f *fakeAWS) describeGroups(p url.Values) (string, error) {
	names := members(p, "AutoScalingGroupNames.member")
	var matched []*fakeASG
	for _, g := range f.sortedGroups() {
		if len(names) > 0 && !contains(names, g.Name) {
			continue
		}
		ok, err := matchFilters(g, p)
		if err != nil {
			return "", err
		}
		if ok {
			matched = append(matched, g)
		}
	}
	start, end, next := f.page(p, len(matched))
	var b strings.Builder
	b.WriteString("<AutoScalingGroups>")
	for _, g := range matched[start:end] {
		b.WriteString(element("member", g))
	}
	b.WriteString("</AutoScalingGroups>")
	if next != "" {
		b.WriteString("<NextToken>" + next + "</NextToken>")
	}
	return b.String(), nil
}

// matchFilters applies tag-key, tag-value and tag:<key> filters, all of
// which must match, as the service does.
func matchFilters(g *fakeASG, p url.Values) (bool, error) {
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("Filters.member.%d", i)
		name, ok := p[prefix+".Name"]
		if !ok {
			return true, nil
		}
		values := members(p, prefix+".Values.member")
		hit := false
		for _, t := range g.Tags {
			switch {
			case name[0] == "tag-key":
				hit = hit || contains(values, t.Key)
			case name[0] == "tag-value":
				hit = hit || contains(values, t.Value)
			case strings.HasPrefix(name[0], "tag:"):
				hit = hit || (t.Key == strings.TrimPrefix(name[0], "tag:") && contains(values, t.Value))
			default:
				return false, validationError("filter name %q is not supported", name[0])
			}
		}
		if !hit {
			return false, nil
		}
	}
}

func (f *fakeAWS) findInstance(id string) (*fakeASG, int) {
	for _, g := range f.sortedGroups() {
		for i, inst := range g.Instances {
			if inst.InstanceId == id {
				return g, i
			}
		}
	}
	return nil, -1
}

func (f *fakeAWS) describeInstances(p url.Values) (string, error) {
	type detail struct {
		InstanceId           string `xml:"InstanceId"`
		AutoScalingGroupName string `xml:"AutoScalingGroupName"`
		AvailabilityZone     string `xml:"AvailabilityZone"`
		LifecycleState       string `xml:"LifecycleState"`
		HealthStatus         string `xml:"HealthStatus"`
		ProtectedFromScaleIn bool   `xml:"ProtectedFromScaleIn"`
	}
	var all []detail
	for _, id := range members(p, "InstanceIds.member") {
		if g, i := f.findInstance(id); g != nil {
			inst := g.Instances[i]
			all = append(all, detail{id, g.Name, inst.AvailabilityZone, inst.LifecycleState, "HEALTHY", false})
		}
	}
	start, end, next := f.page(p, len(all))
	var b strings.Builder
	b.WriteString("<AutoScalingInstances>")
	for _, d := range all[start:end] {
		b.WriteString(element("member", d))
	}
	b.WriteString("</AutoScalingInstances>")
	if next != "" {
		b.WriteString("<NextToken>" + next + "</NextToken>")
	}
	return b.String(), nil
}

func (f *fakeAWS) describeLaunchConfigurations(p url.Values) (string, error) {
	type ebs struct {
		VolumeSize int `xml:"VolumeSize"`
	}
	type mapping struct {
		DeviceName string `xml:"DeviceName"`
		Ebs        ebs    `xml:"Ebs"`
	}
	type lc struct {
		LaunchConfigurationName string    `xml:"LaunchConfigurationName"`
		ImageId                 string    `xml:"ImageId"`
		InstanceType            string    `xml:"InstanceType"`
		BlockDeviceMappings     []mapping `xml:"BlockDeviceMappings>member"`
	}
	var all []lc
	for _, n := range members(p, "LaunchConfigurationNames.member") {
		if c, ok := f.lcs[n]; ok {
			all = append(all, lc{c.Name, "ami-0123456789abcdef0", c.InstanceType, []mapping{{"/dev/xvda", ebs{c.VolumeGiB}}}})
		}
	}
	start, end, next := f.page(p, len(all))
	var b strings.Builder
	b.WriteString("<LaunchConfigurations>")
	for _, c := range all[start:end] {
		b.WriteString(element("member", c))
	}
	b.WriteString("</LaunchConfigurations>")
	if next != "" {
		b.WriteString("<NextToken>" + next + "</NextToken>")
	}
	return b.String(), nil
}

func (f *fakeAWS) setDesiredCapacity(p url.Values) (string, error) {
	g := f.groups[p.Get("AutoScalingGroupName")]
	if g == nil {
		return "", validationError("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", p.Get("AutoScalingGroupName"))
	}
	n, err := strconv.Atoi(p.Get("DesiredCapacity"))
	switch {
	case err != nil:
		return "", validationError("DesiredCapacity %q is not a number", p.Get("DesiredCapacity"))
	case n > g.MaxSize:
		return "", validationError("New SetDesiredCapacity value %d is above max value %d for the AutoScalingGroup.", n, g.MaxSize)
	case n < g.MinSize:
		return "", validationError("New SetDesiredCapacity value %d is below min value %d for the AutoScalingGroup.", n, g.MinSize)
	}
	g.DesiredCapacity = n
	return "", nil
}

func (f *fakeAWS) terminate(p url.Values) (string, error) {
	id := p.Get("InstanceId")
	dec := p.Get("ShouldDecrementDesiredCapacity")
	if dec == "" {
		return "", validationError("ShouldDecrementDesiredCapacity is required")
	}
	g, i := f.findInstance(id)
	if g == nil {
		return "", validationError("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	if dec == "true" {
		if g.DesiredCapacity-1 < g.MinSize {
			return "", validationError("Currently, desiredSize equals minSize (%d). Terminating instance without replacement will violate group's min size constraint.", g.MinSize)
		}
		g.DesiredCapacity--
	}
	g.Instances = append(g.Instances[:i], g.Instances[i+1:]...)
	type activity struct {
		ActivityId           string `xml:"ActivityId"`
		AutoScalingGroupName string `xml:"AutoScalingGroupName"`
		Cause                string `xml:"Cause"`
		Description          string `xml:"Description"`
		StatusCode           string `xml:"StatusCode"`
		Progress             int    `xml:"Progress"`
		StartTime            string `xml:"StartTime"`
	}
	return element("Activity", activity{"act-" + id, g.Name, "terminated by request", "Terminating EC2 instance: " + id, "InProgress", 0, "2026-01-02T03:04:05.000Z"}), nil
}

func (f *fakeAWS) describeLaunchTemplateVersions(p url.Values) (string, error) {
	id, name := p.Get("LaunchTemplateId"), p.Get("LaunchTemplateName")
	versions := members(p, "LaunchTemplateVersion")
	var found []fakeLT
	known := false
	for _, lt := range f.lts {
		if (id != "" && lt.ID != id) || (name != "" && lt.Name != name) {
			continue
		}
		known = true
		for _, v := range versions {
			if v == strconv.Itoa(lt.Version) || (v == "$Default" && lt.Default) || (v == "$Latest" && lt.Version == f.latest(lt.ID)) {
				found = append(found, lt)
			}
		}
	}
	if !known {
		if id != "" {
			return "", apiError{"InvalidLaunchTemplateId.NotFound", fmt.Sprintf("The specified launch template, with template ID %s, does not exist.", id)}
		}
		return "", apiError{"InvalidLaunchTemplateName.NotFoundException", fmt.Sprintf("The specified launch template, with template name %s, does not exist.", name)}
	}
	var b strings.Builder
	b.WriteString("<launchTemplateVersionSet>")
	for _, lt := range found {
		fmt.Fprintf(&b, "<item><launchTemplateId>%s</launchTemplateId><launchTemplateName>%s</launchTemplateName><versionNumber>%d</versionNumber><defaultVersion>%t</defaultVersion><launchTemplateData>",
			lt.ID, lt.Name, lt.Version, lt.Default)
		if lt.InstanceType != "" {
			b.WriteString("<instanceType>" + lt.InstanceType + "</instanceType>")
		}
		if lt.VolumeGiB > 0 {
			fmt.Fprintf(&b, "<blockDeviceMappingSet><item><deviceName>/dev/xvda</deviceName><ebs><volumeSize>%d</volumeSize><volumeType>gp3</volumeType></ebs></item></blockDeviceMappingSet>", lt.VolumeGiB)
		}
		if lt.Spot {
			b.WriteString("<instanceMarketOptions><marketType>spot</marketType></instanceMarketOptions>")
		}
		if lt.BlockID != "" || lt.BlockGroupArn != "" {
			b.WriteString(blockTemplateData(lt))
		}
		b.WriteString("</launchTemplateData></item>")
	}
	b.WriteString("</launchTemplateVersionSet>")
	return b.String(), nil
}

func (f *fakeAWS) latest(id string) int {
	v := 0
	for _, lt := range f.lts {
		if lt.ID == id {
			v = max(v, lt.Version)
		}
	}
	return v
}

func (f *fakeAWS) describeScalingActivities(p url.Values) (string, error) {
	name := p.Get("AutoScalingGroupName")
	if name != "" && f.groups[name] == nil {
		return "", validationError("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	all := f.activities[name]
	start, end, next := f.page(p, len(all))
	var b strings.Builder
	b.WriteString("<Activities>")
	for _, a := range all[start:end] {
		b.WriteString(element("member", a))
	}
	b.WriteString("</Activities>")
	if next != "" {
		b.WriteString("<NextToken>" + next + "</NextToken>")
	}
	return b.String(), nil
}
