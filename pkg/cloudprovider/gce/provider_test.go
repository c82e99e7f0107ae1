package gce

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func TestRefreshMakesTheExpectedCalls(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "gpu-tmpl", props("g2-standard-4").kubeEnv(gpuKubeEnv).build())
	m := e.f.addMIG(testProject, testZone, "gpu", tmpl, 5)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Min: 0, Max: 10, URL: migURL("gpu")}}})
	refresh(t, p)

	want := []struct{ kind, method, path, token string }{
		{"list", "GET", "projects/gpu-project/zones/us-central1-a/instanceGroupManagers", ""},
		{"instanceTemplates", "GET", "projects/gpu-project/global/instanceTemplates/gpu-tmpl", ""},
		{"listManagedInstances", "POST", "projects/gpu-project/zones/us-central1-a/instanceGroupManagers/gpu/listManagedInstances", ""},
		{"listManagedInstances", "POST", "projects/gpu-project/zones/us-central1-a/instanceGroupManagers/gpu/listManagedInstances", "2"},
		{"listManagedInstances", "POST", "projects/gpu-project/zones/us-central1-a/instanceGroupManagers/gpu/listManagedInstances", "4"},
	}
	got := e.f.callsOf("")
	if len(got) != len(want) {
		t.Fatalf("calls: got %d %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		c := got[i]
		if c.Kind != w.kind || c.Method != w.method || c.Path != w.path || c.Query.Get("pageToken") != w.token {
			t.Errorf("call %d: got %s %s %s token %q, want %s %s %s token %q", i, c.Kind, c.Method, c.Path, c.Query.Get("pageToken"), w.kind, w.method, w.path, w.token)
		}
	}
	// Every page was read: the last instance maps to the group.
	last := m.instances[4].Name
	if g, err := p.NodeGroupForNode(node("n", providerID(last))); err != nil || g != migURL("gpu") {
		t.Errorf("NodeGroupForNode(%s) = %q, %v; want %s", last, g, err, migURL("gpu"))
	}
	groups := p.NodeGroups()
	if len(groups) != 1 || groups[0].TargetSize != 5 || groups[0].MinSize != 0 || groups[0].MaxSize != 10 {
		t.Fatalf("groups: %+v", groups)
	}
}

func TestScaleFromZeroTemplates(t *testing.T) {
	cases := []struct {
		name        string
		props       *propsBuilder
		cpu, memory string
		gpus        int64
		accelerator string
		spot        bool
		price       float64
		labels      map[string]string
		taints      int
	}{
		{name: "g2-standard-4 on demand, GKE kube-env", props: props("g2-standard-4").kubeEnv(gpuKubeEnv),
			cpu: "4", memory: "16Gi", gpus: 1, accelerator: "nvidia-l4", price: 0.76,
			labels: map[string]string{LabelGKENodePool: "gpu-pool", "cloud.google.com/gke-os-distribution": "cos"}, taints: 1},
		{name: "a2-highgpu-1g spot, accelerator listed in the template", props: props("a2-highgpu-1g").accelerators("nvidia-tesla-a100", 1).spot(),
			cpu: "12", memory: "85Gi", gpus: 1, accelerator: "nvidia-tesla-a100", spot: true, price: 1.102016,
			labels: map[string]string{LabelGKESpot: "true"}},
		{name: "n1 with two attached T4s, preemptible", props: props("n1-standard-8").accelerators("projects/p/zones/z/acceleratorTypes/nvidia-tesla-t4", 2).preemptible(),
			cpu: "8", memory: "30Gi", gpus: 2, accelerator: "nvidia-tesla-t4", spot: true, price: 0.08 + 2*0.11,
			labels: map[string]string{LabelGKEPreemptible: "true"}},
		{name: "CPU pool", props: props("e2-standard-4"), cpu: "4", memory: "16Gi", price: 0.13402},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tmpl := e.f.addTemplate(testProject, "t", tc.props.build())
			e.f.addMIG(testProject, testZone, "pool", tmpl, 0)
			p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Min: 0, Max: 3, URL: migURL("pool")}}})
			refresh(t, p)
			gs := p.NodeGroups()
			if len(gs) != 1 {
				t.Fatalf("groups: %+v (problems %v)", gs, p.Problems())
			}
			g := gs[0]
			n := g.Template
			checkQuantity(t, n, v1.ResourceCPU, tc.cpu)
			checkQuantity(t, n, v1.ResourceMemory, tc.memory)
			checkQuantity(t, n, v1.ResourceEphemeralStorage, "100Gi")
			if got := gpu.Allocatable(n); got != tc.gpus {
				t.Errorf("GPUs: got %d, want %d", got, tc.gpus)
			}
			if got := n.Labels[gpu.LabelGKEAccelerator]; got != tc.accelerator {
				t.Errorf("accelerator label: got %q, want %q", got, tc.accelerator)
			}
			if g.Spot != tc.spot || !near(g.PricePerHour, tc.price) {
				t.Errorf("spot %v price %g, want %v %g", g.Spot, g.PricePerHour, tc.spot, tc.price)
			}
			for k, v := range tc.labels {
				if n.Labels[k] != v {
					t.Errorf("label %s: got %q, want %q", k, n.Labels[k], v)
				}
			}
			if n.Labels[v1.LabelTopologyZone] != testZone || n.Labels[v1.LabelTopologyRegion] != "us-central1" || n.Labels[v1.LabelInstanceTypeStable] != g.InstanceType {
				t.Errorf("well-known labels: %v", n.Labels)
			}
			if len(n.Spec.Taints) != tc.taints {
				t.Errorf("taints: %v, want %d", n.Spec.Taints, tc.taints)
			}
		})
	}
}

func checkQuantity(t *testing.T, n *v1.Node, name v1.ResourceName, want string) {
	t.Helper()
	got := n.Status.Capacity[name]
	if got.Cmp(resource.MustParse(want)) != 0 {
		t.Errorf("%s: got %s, want %s", name, got.String(), want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestPriceExpanderPicksTheCheaperPool(t *testing.T) {
	e := newEnv(t)
	l4 := e.f.addTemplate(testProject, "l4", props("g2-standard-4").build())
	a100 := e.f.addTemplate(testProject, "a100", props("a2-highgpu-1g").build())
	e.f.addMIG(testProject, testZone, "a100-pool", a100, 0)
	e.f.addMIG(testProject, testZone, "l4-pool", l4, 0)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 4, URL: migURL("a100-pool")}, {Max: 4, URL: migURL("l4-pool")}}})
	refresh(t, p)
	gs := p.NodeGroups()
	if len(gs) != 2 {
		t.Fatalf("groups: %+v", gs)
	}
	chain, err := expander.NewChain("price", expander.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var opts []expander.Option
	for i := range gs {
		opts = append(opts, expander.Option{Group: &gs[i], NodeCount: 1, PodCount: 1})
	}
	best, ok := chain.Choose(opts)
	if !ok || best.Group.ID != migURL("l4-pool") {
		t.Fatalf("price expander chose %v, want the g2 pool (%.2f/h against %.2f/h)", best.Group, gs[1].PricePerHour, gs[0].PricePerHour)
	}
}

func TestAutoDiscoveryByNamePrefixAcrossZones(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("g2-standard-8").build())
	e.f.addMIG(testProject, "us-central1-a", "gke-prod-gpu-pool-1a2b3c4d-grp", tmpl, 1)
	e.f.addMIG(testProject, "us-central1-b", "gke-prod-gpu-pool-5e6f7a8b-grp", tmpl, 0)
	e.f.addMIG(testProject, "us-central1-b", "batch-workers", tmpl, 2)
	static := MIGRef{Project: testProject, Zone: "us-central1-b", Name: "gke-prod-gpu-pool-5e6f7a8b-grp"}
	p := e.provider(t, Options{
		Config:        &Config{Project: testProject, Zones: []string{"us-central1-a", "us-central1-b"}, ClusterName: "prod"},
		NodeGroups:    []NodeGroupSpec{{Min: 1, Max: 2, URL: static.URL()}},
		AutoDiscovery: []DiscoverySpec{{NamePrefix: "gke-prod-", Min: 0, Max: 8}},
	})
	refresh(t, p)
	gs := p.NodeGroups()
	if len(gs) != 2 {
		t.Fatalf("groups: %+v", gs)
	}
	discovered := MIGRef{Project: testProject, Zone: "us-central1-a", Name: "gke-prod-gpu-pool-1a2b3c4d-grp"}
	if gs[0].ID != discovered.URL() || gs[0].MinSize != 0 || gs[0].MaxSize != 8 {
		t.Errorf("discovered group: %+v", gs[0])
	}
	if gs[1].ID != static.URL() || gs[1].MinSize != 1 || gs[1].MaxSize != 2 {
		t.Errorf("static bounds must win: %+v", gs[1])
	}
	for _, g := range gs {
		if pool := g.Template.Labels[LabelGKENodePool]; pool != "gpu-pool" {
			t.Errorf("%s: node pool label %q, want gpu-pool (from the group name)", g.ID, pool)
		}
	}
	if n := len(e.f.callsOf("list")); n != 2 {
		t.Errorf("instanceGroupManagers.list calls: %d, want one per zone", n)
	}
	if n := len(e.f.callsOf("instanceTemplates")); n != 1 {
		t.Errorf("instanceTemplates.get calls: %d, want one for the shared template", n)
	}
}

func TestBadInputLeavesOutOnlyTheBadGroups(t *testing.T) {
	e := newEnv(t)
	good := e.f.addTemplate(testProject, "good", props("e2-standard-4").build())
	noType := e.f.addTemplate(testProject, "no-type", props("").build())
	badEnv := e.f.addTemplate(testProject, "bad-env", props("e2-standard-4").kubeEnv("NODE_TAINTS: a=b:NoSchedule,gpu=yes\n").build())
	e.f.addMIG(testProject, testZone, "good", good, 1)
	e.f.addMIG(testProject, testZone, "no-type", noType, 0)
	e.f.addMIG(testProject, testZone, "bad-env", badEnv, 0)
	e.f.addMIG(testProject, testZone, "gone-template", "https://www.googleapis.com/compute/v1/projects/gpu-project/global/instanceTemplates/deleted", 0)
	e.f.addMIG(testProject, testZone, "no-template", "", 0)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{
		{Max: 3, URL: migURL("good")},
		{Max: 3, URL: "https://www.googleapis.com/compute/v1/projects/gpu-project/zones/us-central1-a/instanceGroup/typo"},
		{Max: 3, URL: migURL("missing")},
		{Max: 3, URL: migURL("no-type")},
		{Max: 3, URL: migURL("bad-env")},
		{Max: 3, URL: migURL("gone-template")},
		{Max: 3, URL: migURL("no-template")},
	}})
	refresh(t, p)
	gs := p.NodeGroups()
	if len(gs) != 1 || gs[0].ID != migURL("good") {
		t.Fatalf("served groups: %+v, want only the good one", gs)
	}
	wantParts := map[string][]string{
		"instanceGroup/typo":    {"instance group URL", "instanceGroup/typo"},
		migURL("missing"):       {"missing not found in projects/gpu-project/zones/us-central1-a"},
		migURL("no-type"):       {"instance template no-type: no machine type"},
		migURL("bad-env"):       {"kube-env NODE_TAINTS: item 2 \"gpu=yes\""},
		migURL("gone-template"): {"instanceTemplates.get deleted", "404"},
		migURL("no-template"):   {"managed instance group no-template has no instance template"},
	}
	probs := p.Problems()
	if len(probs) != len(wantParts) {
		t.Fatalf("problems: %v", probs)
	}
	for _, err := range probs {
		var pr GroupProblem
		if !errors.As(err, &pr) {
			t.Fatalf("problem %v is not a GroupProblem", err)
		}
		var parts []string
		for k, v := range wantParts {
			if strings.HasSuffix(pr.Group, k) {
				parts = v
			}
		}
		if parts == nil {
			t.Errorf("unexpected problem %s: %v", pr.Group, pr.Err)
		}
		for _, s := range parts {
			if !strings.Contains(pr.Err.Error(), s) {
				t.Errorf("problem %s: %q lacks %q", pr.Group, pr.Err, s)
			}
		}
	}
	if !strings.Contains(e.logs.String(), "node group left out") {
		t.Errorf("problems not logged: %s", e.logs)
	}
}

func TestNewRefusesWhenNothingIsValid(t *testing.T) {
	e := newEnv(t)
	_, err := New(Options{Service: e.f.service(), NodeGroups: []NodeGroupSpec{{Max: 1, URL: "projects/p/regions/us-central1/instanceGroups/x"}}})
	if err == nil || !strings.Contains(err.Error(), "regional instance groups are not supported") {
		t.Fatalf("got %v", err)
	}
	_, err = New(Options{Service: e.f.service(), AutoDiscovery: []DiscoverySpec{{NamePrefix: "gke-", Max: 3}}})
	if err == nil || !strings.Contains(err.Error(), "needs a project and zones") {
		t.Fatalf("discovery without zones: got %v", err)
	}
}

func TestRefreshIntervalReusesTheListing(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
	m := e.f.addMIG(testProject, testZone, "pool", tmpl, 2)
	p := e.provider(t, Options{RefreshInterval: 30 * time.Second, NodeGroups: []NodeGroupSpec{{Max: 5, URL: migURL("pool")}}})
	refresh(t, p)
	e.f.resetCalls()
	m.target = 4
	e.clock.Step(29 * time.Second)
	refresh(t, p)
	if calls := e.f.callsOf(""); len(calls) != 0 || p.NodeGroups()[0].TargetSize != 2 {
		t.Fatalf("within the interval: %d calls, target %d", len(calls), p.NodeGroups()[0].TargetSize)
	}
	e.clock.Step(time.Second)
	refresh(t, p)
	if got := p.NodeGroups()[0].TargetSize; got != 4 {
		t.Errorf("after the interval: target %d, want 4", got)
	}
	if n := len(e.f.callsOf("instanceTemplates")); n != 0 {
		t.Errorf("template read again (%d calls): templates are immutable", n)
	}
}

func TestTransientFailureFailsRefreshAndKeepsState(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
	m := e.f.addMIG(testProject, testZone, "pool", tmpl, 2)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 5, URL: migURL("pool")}}})
	refresh(t, p)
	m.target = 3
	e.clock.Step(time.Minute)
	e.f.failNext("listManagedInstances", 503, 503, 503)
	err := p.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "instanceGroupManagers.listManagedInstances (after 3 attempts)") || !strings.Contains(err.Error(), migURL("pool")) {
		t.Fatalf("got %v, want the group, the call and the attempts", err)
	}
	if got := p.NodeGroups(); len(got) != 1 || got[0].TargetSize != 2 {
		t.Fatalf("state after a failed refresh: %+v", got)
	}
	// The list was retried from the failed page, and the next refresh
	// (not rate limited: the failed one did not count) succeeds.
	refresh(t, p)
	if got := p.NodeGroups()[0].TargetSize; got != 3 {
		t.Errorf("target %d, want 3", got)
	}
}

func TestRateLimitedListIsRetried(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
	e.f.addMIG(testProject, testZone, "pool", tmpl, 3)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 5, URL: migURL("pool")}}})
	e.f.failNext("list", 429)
	e.f.failNext("listManagedInstances", 500)
	refresh(t, p)
	if n := len(e.f.callsOf("list")); n != 2 {
		t.Errorf("list calls: %d, want 2 (one 429, one retry)", n)
	}
	if got := p.NodeGroups(); len(got) != 1 || got[0].TargetSize != 3 {
		t.Errorf("groups: %+v", got)
	}
}
