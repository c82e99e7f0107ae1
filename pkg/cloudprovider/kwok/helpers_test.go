package kwok

import (
	"context"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// exampleConfig is the configuration of the package documentation: one GPU
// group and one CPU group.
const exampleConfig = `
provisioningDelay: 30s
devicePluginDelay: 20s
nodeGroups:
- name: gpu-a10g
  minSize: 0
  maxSize: 10
  instanceType: g5.xlarge
  pricePerHour: 1.006
  spot: false
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
- name: cpu
  minSize: 1
  maxSize: 5
  template:
    capacity: {cpu: 8, memory: 32Gi}
`

const testNamespace = "kube-system"

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is a provider on a fake API server and a fake clock.
type env struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	clock  *testingclock.FakeClock
	p      *Provider
}

func newEnv(t *testing.T, objects ...*v1.Node) *env {
	t.Helper()
	client := fake.NewClientset()
	for _, n := range objects {
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, ctx: context.Background(), client: client, clock: testingclock.NewFakeClock(t0)}
	e.p = e.newProvider()
	e.must(e.p.Refresh(e.ctx))
	return e
}

// newProvider is another process on the same cluster: a restart, or the
// next leader.
func (e *env) newProvider() *Provider {
	e.t.Helper()
	cfg, err := ParseConfig([]byte(exampleConfig))
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := New(Options{Client: e.client, Config: cfg, Namespace: testNamespace, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// after moves the clock and reconciles.
func (e *env) after(d time.Duration) {
	e.t.Helper()
	e.clock.Step(d)
	e.must(e.p.Reconcile(e.ctx))
}

// nodes lists the Node objects of a group, sorted by name.
func (e *env) nodes(group string) []v1.Node {
	e.t.Helper()
	list, err := e.client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: LabelNodeGroup + "=" + group})
	if err != nil {
		e.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// target is the group's target size as NodeGroups reports it.
func (e *env) target(group string) int {
	e.t.Helper()
	for _, g := range e.p.NodeGroups() {
		if g.ID == group {
			return g.TargetSize
		}
	}
	e.t.Fatalf("no group %s", group)
	return 0
}

// groupNode is a node of a group as someone else would have made it.
func groupNode(name, group string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{LabelNodeGroup: group}}}
}
