package kwok

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func TestNodeGroupsCarryTemplatesWithTheirGPUs(t *testing.T) {
	e := newEnv(t)
	groups := e.p.NodeGroups()
	if len(groups) != 2 || groups[0].ID != "cpu" || groups[1].ID != "gpu-a10g" {
		t.Fatalf("groups = %+v, want cpu and gpu-a10g sorted", groups)
	}
	g := groups[1]
	if g.MinSize != 0 || g.MaxSize != 10 || g.TargetSize != 0 || g.InstanceType != "g5.xlarge" || g.PricePerHour != 1.006 || g.Spot {
		t.Errorf("group = %+v", g)
	}
	tmpl := g.Template
	if tmpl.Name != "template-gpu-a10g" {
		t.Errorf("template name = %s", tmpl.Name)
	}
	if gpu.Allocatable(tmpl) != 1 || gpu.Capacity(tmpl) != 1 {
		t.Errorf("template GPUs: allocatable %d, capacity %d; want 1 (scale from zero)", gpu.Allocatable(tmpl), gpu.Capacity(tmpl))
	}
	for k, v := range map[string]string{
		LabelNodeGroup: "gpu-a10g", gpu.LabelEKSAccelerator: "nvidia-a10g", v1.LabelHostname: "template-gpu-a10g",
		v1.LabelTopologyZone: "us-east-1a", v1.LabelInstanceTypeStable: "g5.xlarge", v1.LabelOSStable: "linux",
	} {
		if tmpl.Labels[k] != v {
			t.Errorf("template label %s = %q, want %q", k, tmpl.Labels[k], v)
		}
	}
	if len(tmpl.Spec.Taints) != 1 || tmpl.Spec.Taints[0].Key != "nvidia.com/gpu" {
		t.Errorf("template taints = %v", tmpl.Spec.Taints)
	}
	if pods := groups[0].Template.Status.Allocatable[v1.ResourcePods]; pods.Value() != 110 {
		t.Errorf("pods default = %s, want 110", pods.String())
	}
	// Callers may change what they get.
	tmpl.Labels["x"] = "y"
	if _, ok := e.p.NodeGroups()[1].Template.Labels["x"]; ok {
		t.Error("NodeGroups shares its template with callers")
	}
}

func TestIncreaseSizeCreatesNodesAfterTheProvisioningDelay(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 2))
	if got := e.target("gpu-a10g"); got != 2 {
		t.Errorf("target right after the scale-up = %d, want 2", got)
	}
	e.after(29 * e.p.cfg.ProvisioningDelay / 30)
	if n := len(e.nodes("gpu-a10g")); n != 0 {
		t.Fatalf("%d nodes before the provisioning delay", n)
	}
	e.after(e.p.cfg.ProvisioningDelay / 30)
	nodes := e.nodes("gpu-a10g")
	if len(nodes) != 2 {
		t.Fatalf("%d nodes after the provisioning delay, want 2", len(nodes))
	}
	if got := e.target("gpu-a10g"); got != 2 {
		t.Errorf("target once registered = %d, want 2", got)
	}
	if len(e.p.Pending()) != 0 {
		t.Errorf("pending = %v, want none", e.p.Pending())
	}
	n := nodes[0]
	if !strings.HasPrefix(n.Name, "gpu-a10g-") || n.Labels[v1.LabelHostname] != n.Name {
		t.Errorf("node name %s, hostname %s", n.Name, n.Labels[v1.LabelHostname])
	}
	if n.Annotations[AnnotationKwokNode] != "fake" {
		t.Errorf("kwok annotation = %q", n.Annotations[AnnotationKwokNode])
	}
	if n.Labels[gpu.LabelEKSAccelerator] != "nvidia-a10g" || n.Labels[v1.LabelTopologyZone] != "us-east-1a" {
		t.Errorf("labels = %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	if cpu := n.Status.Allocatable[v1.ResourceCPU]; cpu.Value() != 4 {
		t.Errorf("cpu = %s", cpu.String())
	}
	if got, err := e.p.NodeGroupForNode(&n); err != nil || got != "gpu-a10g" {
		t.Errorf("NodeGroupForNode = %q, %v", got, err)
	}
}

func TestGPUsAppearAfterTheDevicePluginDelay(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.after(e.p.cfg.ProvisioningDelay)
	n := e.nodes("gpu-a10g")[0]
	if !gpu.Awaiting(&n) || gpu.Capacity(&n) != 0 {
		t.Fatalf("a new node should register without GPUs: allocatable %v", n.Status.Allocatable)
	}
	e.after(e.p.cfg.DevicePluginDelay - 1)
	if n := e.nodes("gpu-a10g")[0]; gpu.Allocatable(&n) != 0 {
		t.Fatal("GPUs advertised before the device-plugin delay")
	}
	e.after(1)
	n = e.nodes("gpu-a10g")[0]
	if gpu.Allocatable(&n) != 1 || gpu.Capacity(&n) != 1 || gpu.Awaiting(&n) {
		t.Errorf("after the delay: allocatable %v, capacity %v", n.Status.Allocatable, n.Status.Capacity)
	}
	if cpu := n.Status.Allocatable[v1.ResourceCPU]; cpu.Value() != 4 {
		t.Errorf("the GPU patch lost cpu: %v", n.Status.Allocatable)
	}
}

func TestCPUGroupNodesNeedNoDevicePlugin(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	e.after(e.p.cfg.ProvisioningDelay)
	n := e.nodes("cpu")[0]
	if _, ok := n.Annotations[AnnotationGPUsAt]; ok || gpu.IsGPUNode(&n) {
		t.Errorf("CPU node looks like a GPU node: %v", n.Annotations)
	}
}

func TestIncreaseSizeRefusals(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 8))
	err := e.p.IncreaseSize(e.ctx, "gpu-a10g", 3)
	if err == nil || !strings.Contains(err.Error(), "target 8 + 3 would exceed maxSize 10") {
		t.Errorf("above max: err = %v", err)
	}
	if err := e.p.IncreaseSize(e.ctx, "gpu-a10g", 0); err == nil {
		t.Error("delta 0 accepted")
	}
	if err := e.p.IncreaseSize(e.ctx, "nope", 1); !errors.Is(err, cloudprovider.ErrNotFound) {
		t.Errorf("unknown group: err = %v, want ErrNotFound", err)
	}
	if got := e.target("gpu-a10g"); got != 8 {
		t.Errorf("target after refusals = %d, want 8", got)
	}
}

func TestDecreaseTargetSizeDropsPendingCreations(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.after(e.p.cfg.ProvisioningDelay)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 2))
	e.clock.Step(e.p.cfg.ProvisioningDelay / 2)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	latest := e.p.Pending()[2].Name

	e.must(e.p.DecreaseTargetSize(e.ctx, "gpu-a10g", 1))
	if got := e.target("gpu-a10g"); got != 3 {
		t.Errorf("target = %d, want 3", got)
	}
	for _, pn := range e.p.Pending() {
		if pn.Name == latest {
			t.Errorf("the creation due last (%s) should go first", latest)
		}
	}
	err := e.p.DecreaseTargetSize(e.ctx, "gpu-a10g", 3)
	if err == nil || !strings.Contains(err.Error(), "only 2 node(s) pending (target 3, registered 1)") {
		t.Errorf("decrease into registered nodes: err = %v", err)
	}
	e.must(e.p.DecreaseTargetSize(e.ctx, "gpu-a10g", 2))
	e.after(e.p.cfg.ProvisioningDelay)
	if n := len(e.nodes("gpu-a10g")); n != 1 {
		t.Errorf("%d nodes, want the 1 registered before", n)
	}
}

func TestDeleteNodesDeletesMembersOnly(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 3))
	e.after(e.p.cfg.ProvisioningDelay)
	nodes := e.nodes("cpu")

	e.must(e.p.DeleteNodes(e.ctx, "cpu", []*v1.Node{&nodes[0]}))
	if got := len(e.nodes("cpu")); got != 2 {
		t.Errorf("%d nodes after deleting one, want 2", got)
	}
	if got := e.target("cpu"); got != 2 {
		t.Errorf("target = %d, want 2", got)
	}

	stranger := groupNode("other-1", "gpu-a10g")
	err := e.p.DeleteNodes(e.ctx, "cpu", []*v1.Node{&nodes[1], stranger})
	if err == nil || !strings.Contains(err.Error(), `belongs to node group "gpu-a10g", not cpu`) {
		t.Errorf("foreign node: err = %v", err)
	}
	if got := len(e.nodes("cpu")); got != 2 {
		t.Errorf("a refused call deleted nodes: %d left", got)
	}

	err = e.p.DeleteNodes(e.ctx, "cpu", []*v1.Node{&nodes[1], &nodes[2]})
	if err == nil || !strings.Contains(err.Error(), "below minSize 1") {
		t.Errorf("below min: err = %v", err)
	}

	// A node that is already gone counts as deleted.
	e.must(e.client.CoreV1().Nodes().Delete(e.ctx, nodes[1].Name, metav1.DeleteOptions{}))
	e.must(e.p.DeleteNodes(e.ctx, "cpu", []*v1.Node{&nodes[1]}))
}

func TestNodeGroupForNode(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		node *v1.Node
		want string
	}{
		{"labelled member", groupNode("a", "cpu"), "cpu"},
		{"no label", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, ""},
		{"group not configured", groupNode("c", "retired"), ""},
	} {
		got, err := e.p.NodeGroupForNode(tc.node)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := e.p.NodeGroupForNode(nil); err == nil {
		t.Error("nil node accepted")
	}
}

func TestRefreshCountsNodesMadeElsewhere(t *testing.T) {
	e := newEnv(t, groupNode("cpu-by-hand", "cpu"), groupNode("gpu-by-hand", "gpu-a10g"))
	if got := e.target("cpu"); got != 1 {
		t.Errorf("cpu target = %d, want 1", got)
	}
	e.must(e.client.CoreV1().Nodes().Delete(e.ctx, "cpu-by-hand", metav1.DeleteOptions{}))
	e.must(e.p.Refresh(e.ctx))
	if got := e.target("cpu"); got != 0 {
		t.Errorf("cpu target after the node went = %d, want 0 (not replaced)", got)
	}
	// A node made by hand has no device-plugin time: it is left alone.
	e.after(e.p.cfg.DevicePluginDelay)
	if n := e.nodes("gpu-a10g")[0]; gpu.Allocatable(&n) != 0 {
		t.Error("GPUs patched into a node the provider did not make")
	}
}

func TestPendingCreationsSurviveARestart(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 2))
	want := e.p.Pending()

	// The process dies; the next one starts from the API alone.
	e.p = e.newProvider()
	e.must(e.p.Refresh(e.ctx))
	if got := e.target("gpu-a10g"); got != 2 {
		t.Errorf("target after restart = %d, want 2", got)
	}
	got := e.p.Pending()
	if len(got) != 2 || got[0].Name != want[0].Name || !got[0].CreateAt.Equal(want[0].CreateAt) {
		t.Errorf("pending after restart = %v, want %v", got, want)
	}
	e.after(e.p.cfg.ProvisioningDelay)
	if n := len(e.nodes("gpu-a10g")); n != 2 {
		t.Errorf("%d nodes, want 2", n)
	}
	// So does the device-plugin time, kept on the node.
	e.p = e.newProvider()
	e.after(e.p.cfg.DevicePluginDelay)
	for _, n := range e.nodes("gpu-a10g") {
		if gpu.Allocatable(&n) != 1 {
			t.Errorf("node %s has no GPUs after restart and delay", n.Name)
		}
	}
}

func TestACrashBetweenCreateAndForgetCountsTheNodeOnce(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	pn := e.p.Pending()[0]
	// The dead process created the Node but never forgot the entry.
	g := e.p.groups["cpu"]
	_, err := e.client.CoreV1().Nodes().Create(e.ctx, g.newNode(pn.Name, e.clock.Now(), 0), metav1.CreateOptions{})
	e.must(err)

	e.p = e.newProvider()
	e.must(e.p.Refresh(e.ctx))
	if got := e.target("cpu"); got != 1 {
		t.Errorf("target = %d, want 1 (the node and its entry are one)", got)
	}
	e.after(e.p.cfg.ProvisioningDelay)
	if n := len(e.nodes("cpu")); n != 1 || len(e.p.Pending()) != 0 {
		t.Errorf("%d nodes, pending %v; want 1 node and no entry", n, e.p.Pending())
	}
}

func TestCorruptStateIsRefusedNotForgotten(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	cm, err := e.client.CoreV1().ConfigMaps(testNamespace).Get(e.ctx, StateConfigMapName, metav1.GetOptions{})
	e.must(err)
	cm.Annotations[AnnotationPending] = "{not json"
	_, err = e.client.CoreV1().ConfigMaps(testNamespace).Update(e.ctx, cm, metav1.UpdateOptions{})
	e.must(err)
	if err := e.p.Refresh(e.ctx); err == nil || !strings.Contains(err.Error(), AnnotationPending) {
		t.Errorf("Refresh err = %v, want one naming %s", err, AnnotationPending)
	}
	if err := e.p.IncreaseSize(e.ctx, "cpu", 1); err == nil {
		t.Error("IncreaseSize wrote over a state it could not read")
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	cfg, err := ParseConfig([]byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	for name, opts := range map[string]Options{
		"no client":    {Config: cfg, Namespace: "ns"},
		"no config":    {Client: e.client, Namespace: "ns"},
		"no namespace": {Client: e.client, Config: cfg},
		"bad config":   {Client: e.client, Config: &Config{}, Namespace: "ns"},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReconcileReportsAPIErrorsAndKeepsTheEntry(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	e.client.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("api server down")
	})
	e.clock.Step(e.p.cfg.ProvisioningDelay)
	if err := e.p.Reconcile(e.ctx); err == nil || !strings.Contains(err.Error(), "api server down") {
		t.Errorf("err = %v", err)
	}
	if got := e.target("cpu"); got != 1 || len(e.p.Pending()) != 1 {
		t.Errorf("target %d, pending %v: a failed creation must stay pending", got, e.p.Pending())
	}
}
