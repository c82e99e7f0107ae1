package dra_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

const nvidia = "gpu.nvidia.com"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestForNodeGivesEachNodeItsOwnPools(t *testing.T) {
	tmpl := []*resourceapi.ResourceSlice{
		builder.NodeSlice("template-g", nvidia, builder.Devices("gpu-", 8)...),
		builder.NodeSlice("template-g", "nic.example.com", builder.Devices("nic-", 1)...),
	}
	tmpl[1].Spec.Pool.Name = "rdma"
	a := dra.ForNode(tmpl, "template-g", "node-a")
	b := dra.ForNode(tmpl, "template-g", "node-b")
	if *a[0].Spec.NodeName != "node-a" || a[0].Spec.Pool.Name != "node-a" || a[1].Spec.Pool.Name != "rdma-node-a" {
		t.Fatalf("slices for node-a: %v/%s, %s", *a[0].Spec.NodeName, a[0].Spec.Pool.Name, a[1].Spec.Pool.Name)
	}
	if a[0].Name == b[0].Name || a[0].Spec.Pool.Name == b[0].Spec.Pool.Name {
		t.Error("two nodes share a slice or pool name")
	}
	if *tmpl[0].Spec.NodeName != "template-g" || tmpl[0].Spec.Pool.Name != "template-g" {
		t.Error("the template slices were changed")
	}
	s := snapshot.New()
	must(t, s.AddNode(builder.Node("node-a").Build()))
	must(t, dra.AddForNode(s, tmpl, "template-g", "node-a"))
	if got := len(s.NodeResourceSlices("node-a")); got != 2 {
		t.Errorf("node-a has %d slices", got)
	}
}

// TestUnpublished is the DRA half of "a node whose accelerators are not
// advertised yet is upcoming": no slices yet, some drivers only, fewer
// devices than the template (partitions still being made).
func TestUnpublished(t *testing.T) {
	tmpl := []*resourceapi.ResourceSlice{
		builder.NodeSlice("t", nvidia, builder.Devices("gpu-", 8)...),
		builder.NodeSlice("t", "nic.example.com", builder.Devices("nic-", 2)...),
	}
	cases := []struct {
		name      string
		published []*resourceapi.ResourceSlice
		want      []string
	}{
		{"nothing published", nil, []string{"gpu.nvidia.com", "nic.example.com"}},
		{"one driver up", []*resourceapi.ResourceSlice{builder.NodeSlice("n", "nic.example.com", builder.Devices("nic-", 2)...)},
			[]string{"gpu.nvidia.com"}},
		{"fewer devices than promised", []*resourceapi.ResourceSlice{builder.NodeSlice("n", nvidia, builder.Devices("gpu-", 7)...),
			builder.NodeSlice("n", "nic.example.com", builder.Devices("nic-", 2)...)}, []string{"gpu.nvidia.com"}},
		{"all published", []*resourceapi.ResourceSlice{builder.NodeSlice("n", nvidia, builder.Devices("gpu-", 8)...),
			builder.NodeSlice("n", "nic.example.com", builder.Devices("nic-", 2)...)}, nil},
	}
	for _, tc := range cases {
		if got := dra.Unpublished(tmpl, tc.published); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Unpublished = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAwaitingSlices(t *testing.T) {
	s := snapshot.New()
	g := builder.NodeGroup("g").Template(builder.Node("template-g").Build()).
		TemplateSlices(builder.NodeSlice("template-g", nvidia, builder.Devices("gpu-", 2)...)).Build()
	must(t, s.SetNodeGroup(g))
	must(t, s.AddNodeInGroup(builder.Node("n1").Build(), "g"))
	grp := s.NodeGroup("g")
	if !dra.AwaitingSlices(s, grp, "n1") {
		t.Error("a node with no slices is not awaiting them")
	}
	must(t, s.SetResourceSlice(builder.NodeSlice("n1", nvidia, builder.Devices("gpu-", 2)...)))
	if dra.AwaitingSlices(s, grp, "n1") {
		t.Error("a node with its slices still awaits them")
	}
	plain := builder.NodeGroup("cpu").Template(builder.Node("t").Build()).Build()
	if dra.AwaitingSlices(s, &plain, "n1") {
		t.Error("a group without template slices awaits slices")
	}
}

func migDevice(name, profile string) resourceapi.Device {
	return builder.Device(name).Attr("type", "mig").Attr("profile", profile).Attr("productName", "NVIDIA A100-SXM4-40GB").Build()
}

func TestNodeUsage(t *testing.T) {
	s := snapshot.New()
	must(t, s.AddNode(builder.Node("whole").Build()))
	must(t, s.AddNode(builder.Node("mig").Build()))
	must(t, s.AddNode(builder.Node("parted").Build()))
	must(t, s.SetResourceSlice(builder.NodeSlice("whole", nvidia, builder.Devices("gpu-", 4)...)))
	must(t, s.SetResourceSlice(builder.NodeSlice("whole", "nic.example.com", builder.Devices("nic-", 4)...)))
	must(t, s.SetResourceSlice(builder.NodeSlice("mig", nvidia, migDevice("m0", "3g.20gb"), migDevice("m1", "2g.10gb"),
		migDevice("m2", "1g.5gb"), migDevice("m3", "1g.5gb"))))
	// Partitionable: one GPU as the whole device and seven 1g partitions,
	// all on one counter set.
	var parted []resourceapi.Device
	whole := builder.Device("gpu-0").Attr("type", "gpu").Build()
	whole.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: resource.MustParse("7")}}}}
	parted = append(parted, whole)
	for i := 0; i < 7; i++ {
		d := migDevice(fmt.Sprintf("gpu-0-mig-%d", i), "1g.5gb")
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{"slices": {Value: resource.MustParse("1")}}}}
		parted = append(parted, d)
	}
	must(t, s.SetResourceSlice(builder.NodeSlice("parted", nvidia, parted...)))

	hold := func(name, node string, devices ...string) {
		must(t, s.SetResourceClaim(builder.Claim(name).Request("r", "gpu", int64(len(devices))).Allocated(node, nvidia, devices).Build()))
	}
	hold("c1", "whole", "gpu-0")
	hold("c2", "mig", "m0")
	hold("c3", "parted", "gpu-0-mig-0", "gpu-0-mig-1")
	cases := []struct {
		node          string
		used, offered float64
	}{
		{"whole", 1, 4}, // NICs are not accelerators
		{"mig", 3.0 / 7, 1},
		{"parted", 2.0 / 7, 1},
	}
	for _, tc := range cases {
		u := dra.NodeUsage(s, tc.node)
		if math.Abs(u.Used-tc.used) > 1e-9 || math.Abs(u.Offered-tc.offered) > 1e-9 {
			t.Errorf("%s: usage %+v, want %v of %v", tc.node, u, tc.used, tc.offered)
		}
	}
	if u := dra.TemplateUsage(s.NodeResourceSlices("whole")); u.Offered != 4 || u.Used != 0 {
		t.Errorf("template usage %+v", u)
	}
	if !dra.OffersAccelerators(s.NodeResourceSlices("whole")) || dra.OffersAccelerators([]*resourceapi.ResourceSlice{builder.NodeSlice("x", "nic.example.com", builder.Devices("nic-", 1)...)}) {
		t.Error("OffersAccelerators")
	}
}

func TestTemplateSlices(t *testing.T) {
	m, _ := gpu.LookupModel("nvidia-h100-80gb")
	sets := []dra.DeviceSet{dra.NVIDIAGPUs(m, 8), {Driver: "nic.example.com", Count: 2, NamePrefix: "nic-"}}
	slices, err := dra.TemplateSlices("template-g", sets)
	if err != nil {
		t.Fatal(err)
	}
	if len(slices) != 2 || len(slices[0].Spec.Devices) != 8 || slices[0].Spec.Driver != "gpu.nvidia.com" || *slices[0].Spec.NodeName != "template-g" {
		t.Fatalf("slices %+v", slices)
	}
	d := slices[0].Spec.Devices[3]
	mem := d.Capacity["memory"].Value
	if d.Name != "gpu-3" || *d.Attributes["productName"].StringValue != "NVIDIA H100 80GB HBM3" ||
		*d.Attributes["cudaComputeCapability"].VersionValue != "9.0.0" || mem.Value() != 81559<<20 {
		t.Errorf("device %+v", d)
	}
	// The slices pass the snapshot's validation as a group's template.
	s := snapshot.New()
	g := builder.NodeGroup("g").Template(builder.Node("template-g").Build()).Build()
	g.TemplateSlices = slices
	must(t, s.SetNodeGroup(g))

	for _, tc := range []struct {
		set  dra.DeviceSet
		want string
	}{
		{dra.DeviceSet{Driver: "Bad_Driver", Count: 1}, "devices[0].driver"},
		{dra.DeviceSet{Driver: "gpu.nvidia.com", Count: 0}, "devices[0].count: want 1 to 128, got 0"},
		{dra.DeviceSet{Driver: "gpu.nvidia.com", Count: 2, NamePrefix: "GPU_"}, "devices[0].namePrefix"},
	} {
		if _, err := dra.TemplateSlices("t", []dra.DeviceSet{tc.set}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
	if _, err := dra.TemplateSlices("t", []dra.DeviceSet{dra.GenericDevices("x.io", 2), dra.GenericDevices("x.io", 1)}); err == nil {
		t.Error("two sets naming the same devices were accepted")
	}
}
