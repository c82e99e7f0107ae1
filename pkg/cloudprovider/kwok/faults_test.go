package kwok

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func (e *env) group(id string) snapshot.NodeGroup {
	e.t.Helper()
	for _, g := range e.p.NodeGroups() {
		if g.ID == id {
			return g
		}
	}
	e.t.Fatalf("no group %s", id)
	return snapshot.NodeGroup{}
}

// Instances: registered nodes with their providerID and creation time,
// pending creations dated by their scale-up, Creating until their time
// comes.
func TestInstancesAreListed(t *testing.T) {
	old := groupNode("cpu-old", "cpu")
	old.Spec.ProviderID = "kwok://cpu-old"
	old.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	e := newEnv(t, old)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	g := e.group("cpu")
	if !g.InstancesListed || len(g.Instances) != 2 {
		t.Fatalf("instances %+v (listed %v), want the node and the pending creation", g.Instances, g.InstancesListed)
	}
	var pending snapshot.Instance
	for _, inst := range g.Instances {
		if inst.ProviderID == "kwok://cpu-old" {
			if inst.State != snapshot.InstanceRunning || !inst.CreatedAt.Equal(t0.Add(-time.Hour)) {
				t.Errorf("registered node %+v", inst)
			}
		} else {
			pending = inst
		}
	}
	name := e.p.Pending()[0].Name
	if pending.ProviderID != ProviderIDPrefix+name || pending.State != snapshot.InstanceCreating || !pending.CreatedAt.Equal(t0) {
		t.Errorf("pending instance %+v, want kwok://%s creating since t0", pending, name)
	}
	e.after(30 * time.Second)
	nodes := e.nodes("cpu")
	if len(nodes) != 2 || nodes[1].Spec.ProviderID != pending.ProviderID && nodes[0].Spec.ProviderID != pending.ProviderID {
		t.Fatalf("the node registered with another providerID than its instance: %v", nodes)
	}
}

// A node that never registers: its instance boots (listed Running, counted
// in the target) and no Node appears; DeleteNodes with its providerID
// takes it away and lowers the target.
func TestNeverRegisteringInstance(t *testing.T) {
	e := newEnv(t)
	cfg, err := ParseConfig([]byte(exampleConfig))
	e.must(err)
	e.p, err = New(Options{Client: e.client, Config: cfg, Namespace: testNamespace, Clock: e.clock,
		Faults: Faults{NeverRegister: func(group, _ string) bool { return group == "gpu-a10g" }}})
	e.must(err)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.after(time.Hour)
	if n := len(e.nodes("gpu-a10g")); n != 0 {
		t.Fatalf("%d nodes registered, want none", n)
	}
	g := e.group("gpu-a10g")
	if g.TargetSize != 1 || len(g.Instances) != 1 || g.Instances[0].State != snapshot.InstanceRunning {
		t.Fatalf("group %d target, instances %+v; want the booted instance counted", g.TargetSize, g.Instances)
	}
	id := g.Instances[0].ProviderID
	gone := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: v1.NodeSpec{ProviderID: id}}
	e.must(e.p.DeleteNodes(e.ctx, "gpu-a10g", []*v1.Node{gone}))
	if g := e.group("gpu-a10g"); g.TargetSize != 0 || len(g.Instances) != 0 {
		t.Errorf("after deleting it: target %d, instances %+v", g.TargetSize, g.Instances)
	}
	// A providerID of no pending instance is refused.
	other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1.NodeSpec{ProviderID: "kwok://nobody"}}
	if err := e.p.DeleteNodes(e.ctx, "gpu-a10g", []*v1.Node{other}); err == nil {
		t.Error("deleting an unknown instance succeeded")
	}
}

// Faults.Call fails operations before they change anything, as an outage
// or throttling would; once it stops, they work.
func TestCallFaults(t *testing.T) {
	e := newEnv(t)
	cfg, err := ParseConfig([]byte(exampleConfig))
	e.must(err)
	failures := 2
	throttled := errors.New("429 Too Many Requests: rate exceeded")
	e.p, err = New(Options{Client: e.client, Config: cfg, Namespace: testNamespace, Clock: e.clock,
		Faults: Faults{Call: func(op Operation, group string) error {
			if failures > 0 {
				failures--
				return throttled
			}
			return nil
		}}})
	e.must(err)
	for range 2 {
		err := e.p.IncreaseSize(e.ctx, "cpu", 1)
		if !errors.Is(err, throttled) || !strings.Contains(err.Error(), "node group cpu: IncreaseSize") {
			t.Fatalf("IncreaseSize: %v, want the injected error naming the group and operation", err)
		}
		if got := e.target("cpu"); got != 0 {
			t.Fatalf("target %d after a failed call, want 0", got)
		}
	}
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	if got := e.target("cpu"); got != 1 {
		t.Errorf("target %d once the fault ended, want 1", got)
	}
}

func TestGroupOptionsInConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
nodeGroups:
- name: cpu
  maxSize: 5
  autoscalingOptions: {scaledownunneededtime: 2m, scaledownutilizationthreshold: 0.3, ignoredaemonsetsutilization: true}
  template: {capacity: {cpu: 4, memory: 16Gi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.NodeGroups[0].Options
	if o == nil || *o.ScaleDownUnneededTime != 2*time.Minute || *o.ScaleDownUtilizationThreshold != 0.3 || !*o.IgnoreDaemonSetsUtilization {
		t.Fatalf("options %+v", o)
	}
	p, err := New(Options{Client: newEnv(t).client, Config: cfg, Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	if g := p.NodeGroups()[0]; g.Options == nil || *g.Options.ScaleDownUnneededTime != 2*time.Minute {
		t.Errorf("served group options %+v", g.Options)
	}
	for text, want := range map[string]string{
		"scaledownunneededtime: soon":  `nodeGroups[0].autoscalingOptions: scaledownunneededtime="soon"`,
		"zeroormaxnodescaling: true":   `nodeGroups[0].autoscalingOptions.zeroormaxnodescaling: not applied`,
		"scaledownunneededtime: [1m]":  `nodeGroups[0].autoscalingOptions.scaledownunneededtime: want a string, number or boolean`,
		"scaledownutilizationthr: 0.3": `unknown option`,
	} {
		_, err := ParseConfig([]byte("nodeGroups:\n- name: cpu\n  maxSize: 5\n  autoscalingOptions: {" + text + "}\n  template: {capacity: {cpu: 4, memory: 16Gi}}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// Shards keep their pending creations in the same ConfigMap: a provider
// leaves the entries of groups it does not serve to the one that does.
func TestShardsShareTheStateConfigMap(t *testing.T) {
	e := newEnv(t)
	other, err := ParseConfig([]byte("nodeGroups:\n- name: other\n  maxSize: 3\n  template: {capacity: {cpu: 4, memory: 16Gi}}\n"))
	e.must(err)
	shard, err := New(Options{Client: e.client, Config: other, Namespace: testNamespace, Clock: e.clock})
	e.must(err)
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	e.clock.Step(time.Minute)
	e.must(shard.Reconcile(e.ctx))
	if n := len(e.p.Pending()); n != 1 {
		t.Fatalf("the other shard dropped this one's creation: %d pending", n)
	}
	e.must(e.p.Reconcile(e.ctx))
	if n := len(e.nodes("cpu")); n != 1 {
		t.Errorf("%d nodes made by the owner, want 1", n)
	}
}

// A group backed by a capacity reservation or block says so in its
// autoscalingOptions, as AWS tags and GCE nodeGroupOptions do.
func TestReservationOptionsInConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
nodeGroups:
- name: gpu-block
  maxSize: 8
  autoscalingOptions: {reservednodes: 8, capacityblockend: 2026-12-01T11:30:00Z}
  template: {capacity: {cpu: 4, memory: 16Gi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.NodeGroups[0].Options
	if o == nil || o.ReservedNodes == nil || *o.ReservedNodes != 8 || o.CapacityBlockEnd == nil ||
		!o.CapacityBlockEnd.Equal(time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC)) {
		t.Fatalf("options %+v", o)
	}
}
