package aws

import (
	"context"
	"strings"
	"testing"
)

// Bad input never stops the valid groups: Refresh succeeds, the good
// groups are served with their templates, groups with unusable launch data
// or tags are served without one, names that match no group are not
// served, and Problems names each input.
func TestBadInputIsReportedAndValidGroupsAreServed(t *testing.T) {
	noType := g5Group()
	noType.Name, noType.LaunchTemplate = "no-type", &fakeLTSpec{LaunchTemplateId: "lt-0none"}
	badTag := cpuGroup()
	badTag.Name, badTag.Instances, badTag.DesiredCapacity = "bad-tag", nil, 0
	badTag.Tags = append(tags("bad-tag", tagEnabled, "", tagCluster, ""), tags("bad-tag", TagNodeTemplate+"taints/gpu", "NoSchedule")...)
	goneLT := g5Group()
	goneLT.Name, goneLT.LaunchTemplate = "gone-lt", &fakeLTSpec{LaunchTemplateId: "lt-0gone"}
	goneLC := cpuGroup()
	goneLC.Name, goneLC.Instances, goneLC.DesiredCapacity, goneLC.LaunchConfigurationName = "gone-lc", nil, 0, "lc-gone"
	noLaunch := cpuGroup()
	noLaunch.Name, noLaunch.Instances, noLaunch.DesiredCapacity, noLaunch.LaunchConfigurationName = "no-launch", nil, 0, ""

	f := standardFake(t, g5Group(), cpuGroup(), noType, badTag, goneLT, goneLC, noLaunch)
	p := newTestProvider(t, f, Options{
		Groups: []GroupSpec{
			{Name: "missing-asg", MinSize: 0, MaxSize: 3},
			{Name: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/x", MaxSize: 3},
			{Name: " padded", MaxSize: 1},
		},
		AutoDiscovery: discoverAll(),
	})
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v; bad groups must not fail the refresh", err)
	}
	withTemplate := map[string]bool{}
	for _, g := range p.NodeGroups() {
		withTemplate[g.ID] = g.Template != nil
	}
	want := map[string]bool{"cpu-m5": true, "gpu-g5": true, "no-type": false, "bad-tag": false, "gone-lt": false, "gone-lc": false, "no-launch": false}
	if len(withTemplate) != len(want) {
		t.Errorf("served %v, want %v", withTemplate, want)
	}
	for id, tmpl := range want {
		if got, ok := withTemplate[id]; !ok || got != tmpl {
			t.Errorf("group %s: served %t, template %t; want served with template %t", id, ok, got, tmpl)
		}
	}
	var msgs []string
	for _, err := range p.Problems() {
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`--nodes group "missing-asg": Auto Scaling group not found`,
		`--nodes group "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/x": give the Auto Scaling group's name, not its ARN`,
		`--nodes group " padded": name has leading or trailing spaces`,
		"node group no-type: launch template lt-0none version $Default has no instance type",
		`node group bad-tag: tag "` + TagNodeTemplate + `taints/gpu"="NoSchedule": unknown kind "taints"`,
		"node group gone-lt: DescribeLaunchTemplateVersions launch template lt-0gone version $Default",
		"InvalidLaunchTemplateId.NotFound",
		`node group gone-lc: launch configuration "lc-gone" not found`,
		"node group no-launch: no launch template, launch configuration or mixed instances policy",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not contain %q:\n%s", want, all)
		}
	}
	if len(msgs) != 8 {
		t.Errorf("%d problems, want 8:\n%s", len(msgs), all)
	}
	if !strings.Contains(all, "gone-lt: DescribeLaunchTemplateVersions launch template lt-0gone version $Default: operation error") ||
		strings.Contains(all, "previous refresh kept") {
		t.Errorf("a missing launch template is bad input, not a failed call:\n%s", all)
	}
	// The malformed names were never sent to AWS.
	for _, c := range f.callsOf("DescribeAutoScalingGroups") {
		for k, v := range c {
			if strings.HasPrefix(k, "AutoScalingGroupNames") && v[0] != "missing-asg" {
				t.Errorf("sent malformed name %q", v[0])
			}
		}
	}
	// A served group without a template still scales by its nodes.
	if err := p.IncreaseSize(context.Background(), "no-type", 1); err != nil {
		t.Errorf("IncreaseSize on a group without a template: %v", err)
	}
}

func TestNewRefusesOptionsWithoutGroupsOrClients(t *testing.T) {
	f := standardFake(t)
	as, e := f.clients()
	cases := map[string]Options{
		"no groups":     {AutoScaling: as, EC2: e},
		"no tags":       {AutoScaling: as, EC2: e, AutoDiscovery: []map[string]string{{}}},
		"no clients":    {Groups: []GroupSpec{{Name: "a", MaxSize: 1}}},
		"negative time": {AutoScaling: as, EC2: e, Groups: []GroupSpec{{Name: "a", MaxSize: 1}}, RefreshInterval: -1},
	}
	for name, o := range cases {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestInstanceID(t *testing.T) {
	cases := map[string]string{
		"aws:///us-east-1a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"aws://us-east-1a/i-01234567":           "i-01234567",
		"aws:///i-0123456789abcdef0":            "i-0123456789abcdef0",
		"aws:///us-east-1a/i-0123456789ABCDEF0": "",
		"aws:///us-east-1a/":                    "",
		"gce://p/z/i-01234567":                  "",
		"aws:///us-east-1a/i-012":               "",
	}
	for in, want := range cases {
		got, err := InstanceID(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("InstanceID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte("region: eu-west-1\nrefreshInterval: 30s\ncallTimeout: 20s\nprices:\n  p5.48xlarge: 55.04\nspotPrices:\n  g5.xlarge: 0.45\nautoScalingEndpoint: https://autoscaling.eu-west-1.amazonaws.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Region != "eu-west-1" || c.Interval().Seconds() != 30 || c.Timeout().Seconds() != 20 || c.Prices["p5.48xlarge"] != 55.04 || c.SpotPrices["g5.xlarge"] != 0.45 {
		t.Fatalf("config %+v", c)
	}
	for in, want := range map[string]string{
		"regoin: x\n":                     `unknown field "regoin"`,
		"Region: x\n":                     `unknown field "Region"`,
		"prices:\n  g5.xlarge: -1\n":      `prices: want an instance type and a positive price, got "g5.xlarge": -1`,
		"ec2Endpoint: ftp://x\n":          `ec2Endpoint: want an http(s) URL, got "ftp://x"`,
		"refreshInterval: -5s\n":          `refreshInterval: must not be negative, got "-5s"`,
		"region: a\nregion: b\n":          `key "region" already set`,
		"spotPrices:\n  \"\": 1\n":        `spotPrices: want an instance type`,
		"autoScalingEndpoint: https://\n": "autoScalingEndpoint",
		"refreshInterval: soon\n":         `refreshInterval: want a duration such as 30s, got "soon"`,
		"callTimeout: -1m\n":              `callTimeout: must not be negative, got "-1m"`,
		"callTimeout: never\n":            `callTimeout: want a duration such as 30s, got "never"`,
		"prices: [1]\n":                   "prices",
		"region: [a]\n":                   "region",
	} {
		_, err := ParseConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if c, err := LoadConfig(""); err != nil || c.Region != "" {
		t.Errorf("LoadConfig(\"\") = %+v, %v", c, err)
	}
}
