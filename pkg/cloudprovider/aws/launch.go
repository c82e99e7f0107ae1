package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/ptr"
)

// launchSource says where a group's instances are described: a launch
// template version, or a launch configuration, and the first instance
// type override of a mixed instances policy.
type launchSource struct {
	template     ltKey
	config       string
	overrideType string
	// spot marks a mixed instances policy with no on-demand capacity.
	spot bool
	err  error
}

// ltKey names a launch template version; $Default when the group gives no
// version.
type ltKey struct{ id, name, version string }

func (k ltKey) String() string {
	name := k.id
	if name == "" {
		name = k.name
	}
	return fmt.Sprintf("launch template %s version %s", name, k.version)
}

func ltKeyOf(s *astypes.LaunchTemplateSpecification) ltKey {
	k := ltKey{id: ptr.Deref(s.LaunchTemplateId, ""), name: ptr.Deref(s.LaunchTemplateName, ""), version: ptr.Deref(s.Version, "")}
	if k.version == "" {
		k.version = "$Default"
	}
	return k
}

// launchSourceOf reads the group's launch settings, the mixed instances
// policy first, as Auto Scaling itself does.
func launchSourceOf(asg astypes.AutoScalingGroup) launchSource {
	if mip := asg.MixedInstancesPolicy; mip != nil && mip.LaunchTemplate != nil && mip.LaunchTemplate.LaunchTemplateSpecification != nil {
		src := launchSource{template: ltKeyOf(mip.LaunchTemplate.LaunchTemplateSpecification)}
		if o := mip.LaunchTemplate.Overrides; len(o) > 0 {
			src.overrideType = ptr.Deref(o[0].InstanceType, "")
			if src.overrideType == "" {
				src.err = errors.New("the first override of the mixed instances policy names no instance type (attribute-based selection is not supported for templates)")
			}
		}
		if d := mip.InstancesDistribution; d != nil {
			src.spot = ptr.Deref(d.OnDemandBaseCapacity, 0) == 0 && ptr.Deref(d.OnDemandPercentageAboveBaseCapacity, 100) == 0
		}
		return src
	}
	if asg.LaunchTemplate != nil {
		return launchSource{template: ltKeyOf(asg.LaunchTemplate)}
	}
	if n := ptr.Deref(asg.LaunchConfigurationName, ""); n != "" {
		return launchSource{config: n}
	}
	return launchSource{err: errors.New("no launch template, launch configuration or mixed instances policy")}
}

// launchData is what a template or configuration says about new instances.
type launchData struct {
	instanceType string
	ephemeralGiB int64
	spot         bool
	block        blockTarget
}

// addTemplates builds every group's template, fetching each launch
// template version and launch configuration once. A group whose lookup
// call fails keeps the template of the previous reload; a group whose
// launch data or tags are wrong is served without one.
func (p *Provider) addTemplates(ctx context.Context, groups map[string]*group) []error {
	lts := map[ltKey]launchData{}
	ltErrs := map[ltKey]error{}
	var lcNames []string
	for _, g := range groups {
		switch {
		case g.launch.err != nil:
		case g.launch.config != "":
			lcNames = append(lcNames, g.launch.config)
		default:
			if _, done := lts[g.launch.template]; done || ltErrs[g.launch.template] != nil {
				continue
			}
			d, err := p.describeLaunchTemplate(ctx, g.launch.template)
			if err != nil {
				ltErrs[g.launch.template] = err
				continue
			}
			lts[g.launch.template] = d
		}
	}
	lcs, lcErr := p.describeLaunchConfigurations(ctx, lcNames)

	var problems []error
	for _, name := range sortedKeys(groups) {
		g := groups[name]
		d, callErr, dataErr := g.launchData(lts, ltErrs, lcs, lcErr)
		if callErr != nil {
			outcome := "served without a template (no scale-up from the template)"
			if p.keepPreviousTemplate(g) {
				outcome = "template of the previous refresh kept"
			}
			problems = append(problems, fmt.Errorf("aws: node group %s: %w; %s", name, callErr, outcome))
			continue
		}
		if dataErr == nil {
			dataErr = p.setTemplate(g, d)
		}
		if dataErr != nil {
			problems = append(problems, fmt.Errorf("aws: node group %s: %w; served without a template (no scale-up from the template)", name, dataErr))
		}
	}
	return problems
}

// launchData picks the group's data out of the fetched sets: callErr when
// AWS could not be asked, dataErr when the answer is unusable (a launch
// template that does not exist included).
func (g *group) launchData(lts map[ltKey]launchData, ltErrs map[ltKey]error, lcs map[string]launchData, lcErr error) (d launchData, callErr, dataErr error) {
	src := g.launch
	switch {
	case src.err != nil:
		return d, nil, src.err
	case src.config != "":
		if lcErr != nil {
			return d, lcErr, nil
		}
		var ok bool
		if d, ok = lcs[src.config]; !ok {
			return d, nil, fmt.Errorf("launch configuration %q not found", src.config)
		}
	default:
		if err := ltErrs[src.template]; err != nil {
			if missing(err) {
				return d, nil, err
			}
			return d, err, nil
		}
		d = lts[src.template]
	}
	if src.overrideType != "" {
		d.instanceType = src.overrideType
	}
	d.spot = d.spot || src.spot
	if d.instanceType == "" {
		what := src.template.String()
		if src.config != "" {
			what = fmt.Sprintf("launch configuration %q", src.config)
		}
		return d, nil, fmt.Errorf("%s has no instance type", what)
	}
	return d, nil, nil
}

func (p *Provider) setTemplate(g *group, d launchData) error {
	zone := ""
	if len(g.zones) > 0 {
		zone = g.zones[0]
	}
	region := p.opts.Region
	if region == "" && len(zone) > 1 {
		region = zone[:len(zone)-1]
	}
	res, err := buildTemplate(templateInput{
		group: g.name, instanceType: d.instanceType, ephemeralGiB: d.ephemeralGiB,
		zone: zone, region: region, tags: g.tags, spot: d.spot,
	}, p.opts.Prices)
	if err != nil {
		return err
	}
	g.template, g.templateSlices, g.instanceType, g.price, g.spot = res.node, res.slices, d.instanceType, res.price, d.spot
	g.block = d.block
	for _, t := range res.ignored {
		p.log.Warn("aws node group tag not applied", "group", g.name, "tag", t)
	}
	return nil
}

// keepPreviousTemplate carries the last good template over a failed call.
func (p *Provider) keepPreviousTemplate(g *group) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.groups[g.name]
	if old == nil || old.template == nil {
		return false
	}
	g.template, g.templateSlices, g.instanceType, g.price, g.spot = old.template, old.templateSlices, old.instanceType, old.price, old.spot
	g.block = old.block
	return true
}

func (p *Provider) describeLaunchTemplate(ctx context.Context, k ltKey) (launchData, error) {
	in := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{k.version}}
	if k.id != "" {
		in.LaunchTemplateId = ptr.To(k.id)
	} else {
		in.LaunchTemplateName = ptr.To(k.name)
	}
	out, err := p.ec2.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return launchData{}, fmt.Errorf("DescribeLaunchTemplateVersions %s: %w", k, err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return launchData{}, fmt.Errorf("DescribeLaunchTemplateVersions %s: no such version", k)
	}
	data := out.LaunchTemplateVersions[0].LaunchTemplateData
	d := launchData{instanceType: string(data.InstanceType), block: blockTargetOf(data)}
	for _, m := range data.BlockDeviceMappings {
		if m.Ebs != nil {
			d.ephemeralGiB = max(d.ephemeralGiB, int64(ptr.Deref(m.Ebs.VolumeSize, 0)))
		}
	}
	if mo := data.InstanceMarketOptions; mo != nil && mo.MarketType == ec2types.MarketTypeSpot {
		d.spot = true
	}
	return d, nil
}

// describeLaunchConfigurations fetches the named configurations, fifty
// names a call, every page.
func (p *Provider) describeLaunchConfigurations(ctx context.Context, names []string) (map[string]launchData, error) {
	sort.Strings(names)
	names = dedupe(names)
	out := map[string]launchData{}
	for start := 0; start < len(names); start += namesPerCall {
		batch := names[start:min(start+namesPerCall, len(names))]
		in := &autoscaling.DescribeLaunchConfigurationsInput{LaunchConfigurationNames: batch, MaxRecords: ptr.To[int32](namesPerCall)}
		pages := autoscaling.NewDescribeLaunchConfigurationsPaginator(p.as, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeLaunchConfigurations: %w", err)
			}
			for _, lc := range page.LaunchConfigurations {
				d := launchData{instanceType: ptr.Deref(lc.InstanceType, ""), spot: lc.SpotPrice != nil}
				for _, m := range lc.BlockDeviceMappings {
					if m.Ebs != nil {
						d.ephemeralGiB = max(d.ephemeralGiB, int64(ptr.Deref(m.Ebs.VolumeSize, 0)))
					}
				}
				out[ptr.Deref(lc.LaunchConfigurationName, "")] = d
			}
		}
	}
	return out, nil
}

// missing reports whether AWS answered that the launch template or version
// does not exist or is malformed: an answer about the input, not a failed
// call, so retrying next time will not help.
func missing(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	code := api.ErrorCode()
	return strings.Contains(code, "NotFound") || strings.Contains(code, "Malformed")
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
