package aws

import (
	"math"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func groupByID(t *testing.T, groups []snapshot.NodeGroup, id string) snapshot.NodeGroup {
	t.Helper()
	for _, g := range groups {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("group %s not served", id)
	return snapshot.NodeGroup{}
}

func wantQuantity(t *testing.T, n *v1.Node, name v1.ResourceName, want string) {
	t.Helper()
	got, ok := n.Status.Allocatable[name]
	if w := resource.MustParse(want); !ok || got.Cmp(w) != 0 {
		t.Errorf("%s: allocatable %s = %s, want %s", n.Name, name, got.String(), want)
	}
}

func TestScaleFromZeroTemplateForG5FromLaunchTemplate(t *testing.T) {
	f := standardFake(t, g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	g := groupByID(t, p.NodeGroups(), "gpu-g5")
	n := g.Template
	if n == nil {
		t.Fatalf("no template; problems %v", p.Problems())
	}
	// $Latest is version 2: g5.xlarge with a 100 GiB volume.
	wantQuantity(t, n, v1.ResourceCPU, "4")
	wantQuantity(t, n, v1.ResourceMemory, "16Gi")
	wantQuantity(t, n, gpu.ResourceName, "1")
	wantQuantity(t, n, v1.ResourceEphemeralStorage, "100Gi")
	wantQuantity(t, n, v1.ResourcePods, "110")
	for k, want := range map[string]string{
		gpu.LabelEKSAccelerator: AcceleratorA10G, v1.LabelInstanceTypeStable: "g5.xlarge",
		v1.LabelTopologyZone: "us-east-1b", v1.LabelTopologyRegion: "us-east-1", v1.LabelArchStable: "amd64",
	} {
		if got := n.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("taints %v: a GPU group is tainted only when tagged, as EKS GPU AMIs do not taint", n.Spec.Taints)
	}
	if g.InstanceType != "g5.xlarge" || g.PricePerHour != 1.006 || g.Spot || g.TargetSize != 0 {
		t.Errorf("group %+v", g)
	}
	if !gpu.IsGPUNode(n) {
		t.Error("the template is not seen as a GPU node")
	}
	wantCalls(t, f, "DescribeLaunchTemplateVersions", map[string][]string{"LaunchTemplateId": {"lt-0g5"}, "LaunchTemplateVersion.1": {"$Latest"}})
}

// p4d.24xlarge through a mixed instances policy: the first override wins
// over the launch template's own type, and an all-spot distribution is a
// spot group priced from the configuration.
func TestScaleFromZeroTemplateForP4dFromMixedInstancesPolicy(t *testing.T) {
	g := g5Group()
	g.Name, g.LaunchTemplate, g.Tags = "gpu-p4d", nil, tags("gpu-p4d", tagEnabled, "", tagCluster, "owned",
		TagNodeTemplate+"taint/nvidia.com/gpu", "true:NoSchedule",
		TagNodeTemplate+"label/team", "research",
		TagNodeTemplate+"resources/vpc.amazonaws.com/efa", "4")
	g.MixedInstancesPolicy = &fakeMIP{}
	g.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification = fakeLTSpec{LaunchTemplateName: "gpu-p4d"}
	g.MixedInstancesPolicy.LaunchTemplate.Overrides = append(g.MixedInstancesPolicy.LaunchTemplate.Overrides,
		struct {
			InstanceType string `xml:"InstanceType,omitempty"`
		}{"p4d.24xlarge"}, struct {
			InstanceType string `xml:"InstanceType,omitempty"`
		}{"p5.48xlarge"})
	g.MixedInstancesPolicy.InstancesDistribution = &struct {
		OnDemandBaseCapacity                int `xml:"OnDemandBaseCapacity"`
		OnDemandPercentageAboveBaseCapacity int `xml:"OnDemandPercentageAboveBaseCapacity"`
	}{0, 0}
	f := standardFake(t, g)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll(), Prices: Prices{Spot: map[string]float64{"p4d.24xlarge": 11.5}}})
	p.refresh(t)
	ng := groupByID(t, p.NodeGroups(), "gpu-p4d")
	n := ng.Template
	if n == nil {
		t.Fatalf("no template; problems %v", p.Problems())
	}
	wantQuantity(t, n, v1.ResourceCPU, "96")
	wantQuantity(t, n, v1.ResourceMemory, "1152Gi")
	wantQuantity(t, n, gpu.ResourceName, "8")
	wantQuantity(t, n, "vpc.amazonaws.com/efa", "4")
	wantQuantity(t, n, v1.ResourceEphemeralStorage, "500Gi")
	if n.Labels[gpu.LabelEKSAccelerator] != AcceleratorA100 || n.Labels["team"] != "research" || n.Labels[v1.LabelInstanceTypeStable] != "p4d.24xlarge" {
		t.Errorf("labels %v", n.Labels)
	}
	want := v1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: v1.TaintEffectNoSchedule}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != want {
		t.Errorf("taints %v, want %v", n.Spec.Taints, want)
	}
	if !ng.Spot || ng.PricePerHour != 11.5 || ng.InstanceType != "p4d.24xlarge" {
		t.Errorf("group spot %t price %g type %s; want spot at 11.5 as p4d.24xlarge", ng.Spot, ng.PricePerHour, ng.InstanceType)
	}
	wantCalls(t, f, "DescribeLaunchTemplateVersions", map[string][]string{"LaunchTemplateName": {"gpu-p4d"}, "LaunchTemplateVersion.1": {"$Default"}})
}

func TestTemplateFromLaunchConfigurationWithEKSManagedLabels(t *testing.T) {
	g := cpuGroup()
	g.Tags = append(g.Tags, tags("cpu-m5", TagEKSNodeGroup, "general", TagNodeTemplate+"taint/dedicated", "NoExecute")...)
	f := standardFake(t, g)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll(), Region: "us-east-1"})
	p.refresh(t)
	n := groupByID(t, p.NodeGroups(), "cpu-m5").Template
	if n == nil {
		t.Fatalf("no template; problems %v", p.Problems())
	}
	wantQuantity(t, n, v1.ResourceCPU, "2")
	wantQuantity(t, n, v1.ResourceMemory, "8Gi")
	wantQuantity(t, n, v1.ResourceEphemeralStorage, "20Gi")
	if _, ok := n.Status.Allocatable[gpu.ResourceName]; ok || n.Labels[gpu.LabelEKSAccelerator] != "" {
		t.Errorf("a CPU template has GPUs: %v %v", n.Status.Allocatable, n.Labels)
	}
	if n.Labels[LabelEKSNodeGroup] != "general" || n.Labels[LabelEKSCapacityType] != "ON_DEMAND" {
		t.Errorf("EKS labels %v", n.Labels)
	}
	want := v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoExecute}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != want {
		t.Errorf("taints %v, want %v (the bare-effect form of the EKS guide)", n.Spec.Taints, want)
	}
}

func TestTemplateTagsParse(t *testing.T) {
	cases := []struct {
		key, value, wantErr string
	}{
		{"resources/nvidia.com/gpu", "2", ""},
		{"resources/ephemeral-storage", "200Gi", ""},
		{"label/node.kubernetes.io/lifecycle", "spot", ""},
		{"taint/nvidia.com/gpu", ":NoSchedule", ""},
		{"taint/special", "a:b:PreferNoSchedule", "taint value"},
		{"taint/special", "true:NoScheduleX", `effect "NoScheduleX"`},
		{"taint/special", "", `effect ""`},
		{"resources/cpu", "four", "resource quantity"},
		{"resources/memory", "-1Gi", "must not be negative"},
		{"resources/bad name!", "1", "resource name"},
		{"label/ok", "bad value!", "label value"},
		{"labels/team", "a", `unknown kind "labels"`},
		{"taint", "NoSchedule", "want " + TagNodeTemplate},
	}
	o, err := parseTemplateTags(map[string]string{TagNodeTemplate + "autoscaling-options/scaledownunneededtime": "5m"})
	if err != nil || len(o.ignored) != 0 {
		t.Errorf("autoscaling-options: %v, ignored %v; want left to the group's options", err, o.ignored)
	}
	for _, c := range cases {
		key := TagNodeTemplate + c.key
		_, err := parseTemplateTags(map[string]string{key: c.value, "unrelated": "x"})
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s=%s: %v", c.key, c.value, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), key)):
			t.Errorf("%s=%s: %v, want an error naming the tag and %q", c.key, c.value, err, c.wantErr)
		}
	}
}

func TestUnknownInstanceTypeNeedsResourceTags(t *testing.T) {
	in := templateInput{group: "g", instanceType: "x9z.huge", zone: "us-east-1a", region: "us-east-1"}
	if _, err := buildTemplate(in, Prices{}); err == nil || !strings.Contains(err.Error(), `"x9z.huge" is not in the instance type table`) {
		t.Fatalf("unknown type: %v", err)
	}
	in.tags = map[string]string{TagNodeTemplate + "resources/cpu": "8", TagNodeTemplate + "resources/memory": "30Gi"}
	res, err := buildTemplate(in, Prices{OnDemand: map[string]float64{"x9z.huge": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	wantQuantity(t, res.node, v1.ResourceCPU, "8")
	wantQuantity(t, res.node, v1.ResourceMemory, "30Gi")
	if res.price != 0.5 {
		t.Errorf("price %g, want the configured 0.5", res.price)
	}
}

func TestInstanceTypeTableCoversTheGPUAndCPUFamilies(t *testing.T) {
	want := map[string]string{
		"g4dn.xlarge": AcceleratorT4, "g5.xlarge": AcceleratorA10G, "g6.xlarge": AcceleratorL4, "g6e.xlarge": AcceleratorL40S,
		"p3.2xlarge": AcceleratorV100, "p4d.24xlarge": AcceleratorA100, "p5.48xlarge": AcceleratorH100,
		"m5.large": "", "m6i.large": "", "m7i.large": "", "c5.large": "", "c6i.large": "", "r5.large": "",
	}
	for name, acc := range want {
		it, ok := LookupInstanceType(name)
		if !ok || it.Accelerator != acc {
			t.Errorf("%s: %+v, %t; want accelerator %q", name, it, ok, acc)
		}
	}
	for _, name := range InstanceTypeNames() {
		it, _ := LookupInstanceType(name)
		perVCPU := it.PricePerHour / float64(it.VCPU)
		switch {
		case it.VCPU <= 0 || it.MemoryMiB <= 0 || it.PricePerHour <= 0:
			t.Errorf("%s: %+v has a zero field", name, it)
		case (it.GPUs > 0) != (it.Accelerator != ""):
			t.Errorf("%s: %d GPUs but accelerator %q", name, it.GPUs, it.Accelerator)
		case it.Arch != "amd64" && it.Arch != "arm64":
			t.Errorf("%s: arch %q", name, it.Arch)
		case it.GPUs == 0 && (perVCPU < 0.02 || perVCPU > 0.1):
			t.Errorf("%s: $%.4f per vCPU-hour is outside the CPU families' range; a typo?", name, perVCPU)
		case math.IsNaN(perVCPU):
			t.Errorf("%s: price", name)
		}
	}
}
