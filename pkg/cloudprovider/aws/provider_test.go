package aws

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

func TestRefreshDiscoversGroupsByTagsAcrossPages(t *testing.T) {
	other := cpuGroup()
	other.Name, other.Tags = "other-cluster", tags("other-cluster", tagEnabled, "true")
	valued := cpuGroup()
	valued.Name, valued.Instances, valued.DesiredCapacity = "cpu-c5", nil, 0
	valued.Tags = tags("cpu-c5", tagEnabled, "true", tagCluster, "owned")
	f := standardFake(t, g5Group(), cpuGroup(), other, valued)
	f.pageSize = 1
	p := newTestProvider(t, f, Options{AutoDiscovery: []map[string]string{{tagEnabled: "true", tagCluster: ""}}})
	p.refresh(t)

	var ids []string
	for _, g := range p.NodeGroups() {
		ids = append(ids, g.ID)
	}
	if got, want := strings.Join(ids, ","), "cpu-c5,cpu-m5,gpu-g5"; got != want {
		t.Fatalf("groups %s, want %s (sorted, other-cluster lacks the cluster tag)", got, want)
	}
	filters := url.Values{
		"Filters.member.1.Name": {"tag:" + tagEnabled}, "Filters.member.1.Values.member.1": {"true"},
		"Filters.member.2.Name": {"tag-key"}, "Filters.member.2.Values.member.1": {tagCluster},
		"MaxRecords": {"100"},
	}
	page := func(token string) url.Values {
		v := url.Values{}
		for k, x := range filters {
			v[k] = x
		}
		if token != "" {
			v["NextToken"] = []string{token}
		}
		return v
	}
	wantCalls(t, f, "DescribeAutoScalingGroups", page(""), page("page-1"), page("page-2"))
}

func TestNodesFlagBoundsWinOverTheGroup(t *testing.T) {
	f := standardFake(t, cpuGroup())
	p := newTestProvider(t, f, Options{Groups: []GroupSpec{{Name: "cpu-m5", MinSize: 0, MaxSize: 3}}})
	p.refresh(t)
	gs := p.NodeGroups()
	if len(gs) != 1 || gs[0].MinSize != 0 || gs[0].MaxSize != 3 || gs[0].TargetSize != 2 {
		t.Fatalf("groups %+v, want cpu-m5 0..3 target 2", gs)
	}
	wantCalls(t, f, "DescribeAutoScalingGroups", url.Values{"AutoScalingGroupNames.member.1": {"cpu-m5"}, "MaxRecords": {"100"}})
	wantCalls(t, f, "DescribeLaunchConfigurations", url.Values{"LaunchConfigurationNames.member.1": {"lc-m5"}, "MaxRecords": {"50"}})
}

func TestDiscoveredAndNamedGroupIsServedOnceWithFlagBounds(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{Groups: []GroupSpec{{Name: "cpu-m5", MinSize: 2, MaxSize: 4}}, AutoDiscovery: discoverAll()})
	p.refresh(t)
	gs := p.NodeGroups()
	if len(gs) != 2 || gs[0].ID != "cpu-m5" || gs[0].MinSize != 2 || gs[0].MaxSize != 4 || gs[1].ID != "gpu-g5" || gs[1].MaxSize != 10 {
		t.Fatalf("groups %+v", gs)
	}
}

func TestRefreshUsesTheCacheUntilTheIntervalEnds(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll(), RefreshInterval: time.Minute})
	p.refresh(t)
	f.resetCalls()

	// Someone else resizes the group: not seen until the cache expires.
	g := f.group("cpu-m5")
	g.DesiredCapacity = 4
	f.putGroup(g)
	p.clock.Step(59 * time.Second)
	p.refresh(t)
	if n := len(f.actions()); n != 0 {
		t.Fatalf("Refresh within the interval made %d calls: %v", n, f.actions())
	}
	if got := p.NodeGroups()[0].TargetSize; got != 2 {
		t.Fatalf("target %d before the interval ends, want the cached 2", got)
	}
	p.clock.Step(time.Second)
	p.refresh(t)
	if got := p.NodeGroups()[0].TargetSize; got != 4 {
		t.Fatalf("target %d after the interval, want 4", got)
	}
	// The provider's own change shows at once, with no reload.
	f.resetCalls()
	if err := p.IncreaseSize(context.Background(), "gpu-g5", 2); err != nil {
		t.Fatal(err)
	}
	p.refresh(t)
	if got := p.NodeGroups()[1].TargetSize; got != 2 {
		t.Fatalf("gpu-g5 target %d after IncreaseSize, want 2", got)
	}
	// Groups still launching read their scaling activities (for failed
	// launches), but nothing is reloaded.
	var calls []string
	for _, a := range f.actions() {
		if a != "DescribeScalingActivities" {
			calls = append(calls, a)
		}
	}
	if got := strings.Join(calls, ","); got != "SetDesiredCapacity" {
		t.Fatalf("calls %s, want only SetDesiredCapacity", got)
	}
}

func TestNodeGroupForNodeMapsProviderIDs(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	cases := []struct{ name, providerID, want string }{
		{"cached instance", "aws:///us-east-1a/i-0000000000000000a", "cpu-m5"},
		{"fargate", "aws:///us-east-1a/0123abcd/fargate-ip-10-0-0-1.ec2.internal", ""},
		{"other cloud", "gce://project/zone/vm", ""},
		{"no providerID yet", "", ""},
		{"malformed id", "aws:///us-east-1a/i-XYZ", ""},
	}
	for _, c := range cases {
		got, err := p.NodeGroupForNode(node(c.name, c.providerID))
		if err != nil || got != c.want {
			t.Errorf("%s: NodeGroupForNode(%q) = %q, %v; want %q", c.name, c.providerID, got, err, c.want)
		}
	}
	if len(f.callsOf("DescribeAutoScalingInstances")) != 0 {
		t.Fatalf("instances not in an EC2 providerID were looked up")
	}
}

func TestNewInstanceIsLookedUpAtTheNextRefresh(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	// A scale-up launched an instance after the reload; a stranger's
	// instance belongs to no served group.
	g := f.group("gpu-g5")
	g.DesiredCapacity, g.Instances = 1, running("us-east-1b", "i-00000000000000b51")
	f.putGroup(g)
	fresh := node("gpu-1", "aws:///us-east-1b/i-00000000000000b51")
	stranger := node("other", "aws:///us-east-1b/i-00000000000000999")
	if got, _ := p.NodeGroupForNode(fresh); got != "" {
		t.Fatalf("uncached instance mapped to %q before the lookup", got)
	}
	_, _ = p.NodeGroupForNode(stranger)
	p.refresh(t)
	wantCalls(t, f, "DescribeAutoScalingInstances", url.Values{
		"InstanceIds.member.1": {"i-00000000000000999"}, "InstanceIds.member.2": {"i-00000000000000b51"}, "MaxRecords": {"50"},
	})
	if got, _ := p.NodeGroupForNode(fresh); got != "gpu-g5" {
		t.Fatalf("after the lookup: %q, want gpu-g5", got)
	}
	if got, _ := p.NodeGroupForNode(stranger); got != "" {
		t.Fatalf("stranger mapped to %q", got)
	}
	p.refresh(t)
	if n := len(f.callsOf("DescribeAutoScalingInstances")); n != 1 {
		t.Fatalf("an instance of no group was looked up again (%d lookups)", n)
	}
}

func TestIncreaseSizeSetsDesiredCapacity(t *testing.T) {
	f := standardFake(t, g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	ctx := context.Background()
	if err := p.IncreaseSize(ctx, "gpu-g5", 3); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "SetDesiredCapacity", url.Values{"AutoScalingGroupName": {"gpu-g5"}, "DesiredCapacity": {"3"}, "HonorCooldown": {"false"}})
	if got := f.group("gpu-g5").DesiredCapacity; got != 3 {
		t.Fatalf("desired %d, want 3", got)
	}
	err := p.IncreaseSize(ctx, "gpu-g5", 8)
	if err == nil || !strings.Contains(err.Error(), "would exceed maxSize 10") {
		t.Fatalf("above max: %v", err)
	}
	if err := p.IncreaseSize(ctx, "nope", 1); !errors.Is(err, cloudprovider.ErrNotFound) {
		t.Fatalf("unknown group: %v, want ErrNotFound", err)
	}
	if err := p.IncreaseSize(ctx, "gpu-g5", 0); err == nil {
		t.Fatal("a zero increase was accepted")
	}
	if n := len(f.callsOf("SetDesiredCapacity")); n != 1 {
		t.Fatalf("%d SetDesiredCapacity calls, want 1: refused increases must not call AWS", n)
	}
}

func TestDeleteNodesTerminatesAndDecrements(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{Groups: []GroupSpec{{Name: "cpu-m5", MinSize: 0, MaxSize: 5}}, AutoDiscovery: discoverAll()})
	p.refresh(t)
	ctx := context.Background()
	a := node("node-a", "aws:///us-east-1a/i-0000000000000000a")
	if err := p.DeleteNodes(ctx, "cpu-m5", []*v1.Node{a}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "TerminateInstanceInAutoScalingGroup", url.Values{"InstanceId": {"i-0000000000000000a"}, "ShouldDecrementDesiredCapacity": {"true"}})
	if g := f.group("cpu-m5"); g.DesiredCapacity != 1 || len(g.Instances) != 1 {
		t.Fatalf("after delete: desired %d, %d instances; want 1, 1", g.DesiredCapacity, len(g.Instances))
	}
	if got := p.NodeGroups()[0].TargetSize; got != 1 {
		t.Fatalf("cached target %d, want 1", got)
	}
	if got, _ := p.NodeGroupForNode(a); got != "" {
		t.Fatalf("terminated instance still maps to %q", got)
	}
}

func TestDeleteNodesRefusesWithoutCallingTerminate(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	stray := cpuGroup()
	stray.Name, stray.Tags, stray.Instances = "stray", nil, running("us-east-1a", "i-000000000000000cc")
	f.putGroup(stray)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	ctx := context.Background()
	a := node("node-a", "aws:///us-east-1a/i-0000000000000000a")
	b := node("node-b", "aws:///us-east-1a/i-0000000000000000b")
	cases := []struct {
		name  string
		group string
		nodes []*v1.Node
		want  string
	}{
		{"below the group's minimum", "cpu-m5", []*v1.Node{a, b}, "below minSize 1"},
		{"node of another group", "gpu-g5", []*v1.Node{a}, "belongs to Auto Scaling group cpu-m5, not gpu-g5"},
		{"instance of an unserved group", "cpu-m5", []*v1.Node{node("c", "aws:///us-east-1a/i-000000000000000cc")}, "belongs to Auto Scaling group stray"},
		{"not an EC2 node", "cpu-m5", []*v1.Node{node("d", "")}, `providerID ""`},
		{"same node twice", "cpu-m5", []*v1.Node{a, a}, "given twice"},
	}
	for _, c := range cases {
		err := p.DeleteNodes(ctx, c.group, c.nodes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	wantCalls(t, f, "TerminateInstanceInAutoScalingGroup")
}

func TestManyGroupsAndInstancesAreAskedForInBatches(t *testing.T) {
	var groups []fakeASG
	var specs []GroupSpec
	for i := range 120 {
		g := cpuGroup()
		g.Name, g.Instances, g.DesiredCapacity, g.Tags = fmt.Sprintf("ng-%03d", i), nil, 0, nil
		groups = append(groups, g)
		specs = append(specs, GroupSpec{Name: g.Name, MaxSize: 3})
	}
	f := standardFake(t, groups...)
	f.pageSize = 30
	p := newTestProvider(t, f, Options{Groups: specs})
	p.refresh(t)
	if n := len(p.NodeGroups()); n != 120 {
		t.Fatalf("%d groups served, want 120; problems %v", n, p.Problems())
	}
	var perCall []int
	for _, c := range f.invocationsOf("DescribeAutoScalingGroups") {
		perCall = append(perCall, len(members(c, "AutoScalingGroupNames.member")))
	}
	// 50, 50 and 20 names; pages of 30 split the 50s in two.
	if got := fmt.Sprint(perCall); got != "[50 50 50 50 20]" {
		t.Fatalf("names per call %s", got)
	}
	if n := len(f.invocationsOf("DescribeLaunchConfigurations")); n != 1 {
		t.Fatalf("%d DescribeLaunchConfigurations calls for one shared configuration, want 1", n)
	}

	var ids []string
	for i := range 60 {
		id := fmt.Sprintf("i-%017x", i+1)
		ids = append(ids, id)
		_, _ = p.NodeGroupForNode(node(id, "aws:///us-east-1a/"+id))
	}
	p.refresh(t)
	calls := f.invocationsOf("DescribeAutoScalingInstances")
	if len(calls) != 2 || len(members(calls[0], "InstanceIds.member")) != 50 || members(calls[1], "InstanceIds.member")[9] != ids[59] {
		t.Fatalf("instance lookups %v", calls)
	}
}
