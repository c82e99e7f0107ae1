package gce

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Every named instance is listed with the providerID its node registers
// with and a state from its current action; instances the provider deletes
// are marked so until the MIG stops listing them.
func TestInstancesAreListed(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "cpu", props("n2-standard-4").build())
	m := e.f.addMIG(testProject, testZone, "pool", tmpl, 2)
	m.add("CREATING", "")
	m.add("DELETING", "STOPPING")
	unnamed := m.add("CREATING", "")
	unnamed.Instance = ""
	m.target = 5
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Min: 0, Max: 10, URL: migURL("pool")}}})
	refresh(t, p)
	g := p.NodeGroups()[0]
	want := []snapshot.Instance{
		{ProviderID: providerID("pool-0"), State: snapshot.InstanceRunning},
		{ProviderID: providerID("pool-1"), State: snapshot.InstanceRunning},
		{ProviderID: providerID("pool-2"), State: snapshot.InstanceCreating},
		{ProviderID: providerID("pool-3"), State: snapshot.InstanceDeleting},
	}
	if !g.InstancesListed || len(g.Instances) != len(want) {
		t.Fatalf("instances %+v (listed %v), want %+v", g.Instances, g.InstancesListed, want)
	}
	for i := range want {
		if g.Instances[i] != want[i] {
			t.Errorf("instance %d: %+v, want %+v", i, g.Instances[i], want[i])
		}
	}
	if err := p.DeleteNodes(context.Background(), migURL("pool"), []*v1.Node{node("n0", providerID("pool-0"))}); err != nil {
		t.Fatal(err)
	}
	if got := p.NodeGroups()[0].Instances[0]; got.State != snapshot.InstanceDeleting {
		t.Errorf("deleted instance %+v, want marked deleting", got)
	}
}

// nodeGroupOptions: exact names win over prefixes, the longest prefix over
// shorter ones; bad entries are refused naming the entry and the option.
func TestGroupOptionsFromConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
nodeGroupOptions:
  gke-prod-*: {scaledownunneededtime: 20m}
  gke-prod-a100-*: {scaledowngpuutilizationthreshold: 0.3}
  gke-prod-a100-1a2b3c4d-grp: {maxnodeprovisiontime: 30m}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.NodeGroupOptions
	if g := o.forGroup("gke-prod-a100-1a2b3c4d-grp"); g == nil || *g.MaxNodeProvisionTime != 30*time.Minute || g.ScaleDownGPUUtilizationThreshold != nil {
		t.Errorf("exact entry: %+v", g)
	}
	if g := o.forGroup("gke-prod-a100-9f9f9f9f-grp"); g == nil || *g.ScaleDownGPUUtilizationThreshold != 0.3 {
		t.Errorf("longest prefix: %+v", g)
	}
	if g := o.forGroup("gke-prod-cpu-1a2b3c4d-grp"); g == nil || *g.ScaleDownUnneededTime != 20*time.Minute {
		t.Errorf("short prefix: %+v", g)
	}
	if g := o.forGroup("batch"); g != nil {
		t.Errorf("no entry: %+v", g)
	}
	for text, want := range map[string]string{
		"nodeGroupOptions: {pool: {scaledownunneededtime: soon}}":   `nodeGroupOptions["pool"]: scaledownunneededtime="soon"`,
		"nodeGroupOptions: {pool: {zeroormaxnodescaling: true}}":    `nodeGroupOptions["pool"]: zeroormaxnodescaling: not applied`,
		"nodeGroupOptions: {Bad_Name: {scaledownunneededtime: 1m}}": `nodeGroupOptions["Bad_Name"]: want a managed instance group name`,
		"nodeGroupOptions: {pool: {scaledownunneededtime: [1m]}}":   `want a string, number or boolean`,
	} {
		if _, err := ParseConfig([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// A served group carries its entry's options.
func TestGroupOptionsReachTheGroup(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "cpu", props("n2-standard-4").build())
	e.f.addMIG(testProject, testZone, "pool", tmpl, 1)
	cfg, err := ParseConfig([]byte("nodeGroupOptions: {pool: {scaledownunneededtime: 3m}}"))
	if err != nil {
		t.Fatal(err)
	}
	p := e.provider(t, Options{Config: cfg, NodeGroups: []NodeGroupSpec{{Min: 0, Max: 10, URL: migURL("pool")}}})
	refresh(t, p)
	if o := p.NodeGroups()[0].Options; o == nil || *o.ScaleDownUnneededTime != 3*time.Minute {
		t.Errorf("options %+v, want scaledownunneededtime 3m", o)
	}
}
