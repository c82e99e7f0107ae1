package kwok

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/dra"
)

const draConfig = `
provisioningDelay: 10s
devicePluginDelay: 20s
nodeGroups:
- name: dra-h100
  maxSize: 4
  template:
    labels: {nvidia.com/gpu.deploy.device-plugin: "false"}
    capacity: {cpu: 32, memory: 128Gi}
    devices:
    - driver: gpu.nvidia.com
      count: 8
      gpuModel: nvidia-h100-80gb
    - driver: nic.example.com
      count: 2
      namePrefix: nic-
      attributes: {speed: 400, rdma: true, vendor: example, firmware: {version: "1.2.3"}}
      capacity: {bandwidth: 400G}
`

func TestDRADevicesInTheConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(draConfig))
	if err != nil {
		t.Fatal(err)
	}
	devs := cfg.NodeGroups[0].Template.Devices
	if len(devs) != 2 || devs[0].Count != 8 || *devs[0].Attributes["productName"].StringValue != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("devices %+v", devs)
	}
	nic := devs[1]
	bw := nic.Capacity["bandwidth"].Value
	if *nic.Attributes["speed"].IntValue != 400 || !*nic.Attributes["rdma"].BoolValue || *nic.Attributes["firmware"].VersionValue != "1.2.3" ||
		*nic.Attributes["vendor"].StringValue != "example" || bw.String() != "400G" {
		t.Errorf("nic devices %+v", nic)
	}
}

func TestDRADevicesRefusedWithTheField(t *testing.T) {
	group := func(devices string) string {
		return oneGroup("name: a\nmaxSize: 1\ntemplate:\n  capacity: {cpu: 1, memory: 1Gi}\n  devices: " + devices)
	}
	for _, tc := range []struct{ devices, want string }{
		{"[{driver: gpu.nvidia.com}]", `nodeGroups[0].template.devices[0].count: required`},
		{"[{driver: gpu.nvidia.com, count: 200}]", `nodeGroups[0].template.devices[0].count: want 1 to 128, got 200`},
		{"[{driver: GPU, count: 1}]", `nodeGroups[0].template.devices[0].driver: "GPU" is not a DNS subdomain`},
		{"[{driver: gpu.nvidia.com, count: 1, gpuModel: nvidia-z9}]", `nodeGroups[0].template.devices[0].gpuModel: unknown GPU model "nvidia-z9"`},
		{"[{driver: x.io, count: 1, attributes: {a: 1.5}}]", `nodeGroups[0].template.devices[0].attributes["a"]: want a whole number, got 1.5`},
		{"[{driver: x.io, count: 1, attributes: {a: [1]}}]", `nodeGroups[0].template.devices[0].attributes["a"]: want a string, a whole number`},
		{"[{driver: x.io, count: 1, capacity: {m: lots}}]", `nodeGroups[0].template.devices[0].capacity["m"]: bad quantity "lots"`},
		{"[{driver: x.io, count: 1, model: a}]", `nodeGroups[0].template.devices[0]: unknown field "model"`},
		{"[{driver: x.io, count: 2}, {driver: x.io, count: 1}]", `device device-0 of driver x.io is declared twice`},
	} {
		_, err := ParseConfig([]byte(group(tc.devices)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("devices %s: err = %v, want %q", tc.devices, err, tc.want)
		}
	}
}

// TestDRANodesPublishTheirSlicesAfterTheDelay: the group's template carries
// its slices (scale from zero), and a new node publishes its own copy once
// the device-plugin delay has passed, not before.
func TestDRANodesPublishTheirSlicesAfterTheDelay(t *testing.T) {
	cfg, err := ParseConfig([]byte(draConfig))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	e := &env{t: t, ctx: t.Context(), client: client, clock: testingclock.NewFakeClock(t0)}
	e.p, err = New(Options{Client: client, Config: cfg, Namespace: testNamespace, Clock: e.clock})
	e.must(err)
	e.must(e.p.Refresh(e.ctx))
	g := e.p.NodeGroups()[0]
	if len(g.TemplateSlices) != 2 || *g.TemplateSlices[0].Spec.NodeName != g.Template.Name {
		t.Fatalf("template slices %+v", g.TemplateSlices)
	}
	e.must(e.p.IncreaseSize(e.ctx, "dra-h100", 1))
	e.after(cfg.ProvisioningDelay)
	slices := func() int {
		list, err := client.ResourceV1().ResourceSlices().List(e.ctx, metav1.ListOptions{})
		e.must(err)
		return len(list.Items)
	}
	if n := slices(); n != 0 {
		t.Fatalf("%d slices published before the delay", n)
	}
	e.after(cfg.DevicePluginDelay)
	list, err := client.ResourceV1().ResourceSlices().List(e.ctx, metav1.ListOptions{})
	e.must(err)
	node := e.nodes("dra-h100")[0]
	var published []*resourceapi.ResourceSlice
	for i := range list.Items {
		published = append(published, &list.Items[i])
	}
	if missing := dra.Unpublished(g.TemplateSlices, published); len(list.Items) != 2 || len(missing) != 0 {
		t.Fatalf("published %d slices, missing %v", len(list.Items), missing)
	}
	for _, sl := range list.Items {
		if *sl.Spec.NodeName != node.Name || sl.Spec.Pool.Name == g.Template.Name || sl.OwnerReferences[0].Name != node.Name {
			t.Errorf("slice %s: node %s, pool %s, owner %v", sl.Name, *sl.Spec.NodeName, sl.Spec.Pool.Name, sl.OwnerReferences)
		}
	}
	e.after(cfg.DevicePluginDelay)
	if n := slices(); n != 2 {
		t.Errorf("a second reconcile left %d slices", n)
	}
}
