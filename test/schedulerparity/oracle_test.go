package schedulerparity

import (
	"math/rand"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

func node(name string, labels map[string]string, alloc ...string) *v1.Node {
	l := map[string]string{v1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	rl := v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}
	for i := 0; i+1 < len(alloc); i += 2 {
		rl[v1.ResourceName(alloc[i])] = resource.MustParse(alloc[i+1])
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: l},
		Status:     v1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
}

func pod(name, nodeName string, labels map[string]string, requests ...string) *v1.Pod {
	rl := v1.ResourceList{}
	for i := 0; i+1 < len(requests); i += 2 {
		rl[v1.ResourceName(requests[i])] = resource.MustParse(requests[i+1])
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: labels},
		Spec: v1.PodSpec{
			NodeName:   nodeName,
			Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}},
		},
	}
}

func explain(t *testing.T, c *Cluster, p *v1.Pod) map[string]Verdict {
	t.Helper()
	o, err := NewOracle(c)
	if err != nil {
		t.Fatal(err)
	}
	v, err := o.Explain(p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// expect checks each listed node: "" means feasible, otherwise a substring
// of one of the reasons.
func expect(t *testing.T, got map[string]Verdict, want map[string]string) {
	t.Helper()
	for n, reason := range want {
		v, ok := got[n]
		switch {
		case !ok:
			t.Errorf("%s: no verdict", n)
		case reason == "" && !v.Feasible:
			t.Errorf("%s: want feasible, got %+v", n, v)
		case reason != "" && (v.Feasible || !strings.Contains(strings.Join(v.Reasons, "|"), reason)):
			t.Errorf("%s: want rejection %q, got %+v", n, reason, v)
		}
	}
}

func TestGPUPodNeedsGPUNode(t *testing.T) {
	c := &Cluster{Nodes: []*v1.Node{
		node("cpu", nil, "cpu", "8", "memory", "16Gi"),
		node("gpu", nil, "cpu", "8", "memory", "16Gi", string(GPU), "1"),
	}}
	got := explain(t, c, pod("p", "", nil, "cpu", "1", string(GPU), "1"))
	expect(t, got, map[string]string{"cpu": "Insufficient nvidia.com/gpu", "gpu": ""})
	if got["cpu"].Plugin != "NodeResourcesFit" || got["cpu"].Stage != "Filter" {
		t.Errorf("cpu node rejected by %+v", got["cpu"])
	}
	// A MIG profile the node does not advertise is just as insufficient,
	// and with no room left at all the node is unresolvable.
	got = explain(t, c, pod("p", "", nil, string(MIG1g), "1"))
	expect(t, got, map[string]string{"cpu": "Insufficient nvidia.com/mig-1g.10gb", "gpu": "Insufficient nvidia.com/mig-1g.10gb"})
	if got["gpu"].Code != fwk.UnschedulableAndUnresolvable {
		t.Errorf("request above allocatable should be unresolvable, got %v", got["gpu"].Code)
	}
}

func TestExistingAntiAffinityIsSymmetric(t *testing.T) {
	guard := pod("guard", "a", map[string]string{"app": "db"}, "cpu", "100m")
	guard.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			TopologyKey:   v1.LabelHostname,
		}},
	}}
	c := &Cluster{
		Nodes: []*v1.Node{node("a", nil, "cpu", "4"), node("b", nil, "cpu", "4")},
		Pods:  []*v1.Pod{guard},
	}
	expect(t, explain(t, c, pod("web", "", map[string]string{"app": "web"})), map[string]string{
		"a": "didn't satisfy existing pods anti-affinity rules", "b": "",
	})
	expect(t, explain(t, c, pod("other", "", map[string]string{"app": "db"})), map[string]string{"a": "", "b": ""})
}

func TestFirstPodOfSelfAffineGroup(t *testing.T) {
	c := &Cluster{Nodes: []*v1.Node{
		node("zoned", map[string]string{v1.LabelTopologyZone: "zone-a"}),
		node("bare", nil),
	}}
	p := pod("p", "", map[string]string{"app": "train"})
	p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}},
			TopologyKey:   v1.LabelTopologyZone,
		}},
	}}
	// No pod matches yet, the pod matches itself: allowed wherever the
	// topology key exists.
	expect(t, explain(t, c, p), map[string]string{"zoned": "", "bare": "didn't match pod affinity rules"})
}

func TestMatchFieldsNarrowsInPreFilter(t *testing.T) {
	c := &Cluster{Nodes: []*v1.Node{node("a", nil), node("b", nil)}}
	p := pod("p", "", nil)
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}},
		}}},
	}}
	got := explain(t, c, p)
	expect(t, got, map[string]string{"a": "", "b": "didn't satisfy plugin(s) [NodeAffinity]"})
	if got["b"].Stage != "PreFilter" {
		t.Errorf("b rejected at %q, want PreFilter", got["b"].Stage)
	}
	// Naming only a node that does not exist leaves every node out, one
	// by one; it is not a whole-pod rejection.
	fields := &p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields
	(*fields)[0].Values = []string{"zzz"}
	expect(t, explain(t, c, p), map[string]string{"a": "didn't satisfy plugin(s) [NodeAffinity]", "b": "didn't satisfy plugin(s) [NodeAffinity]"})
	// Two In requirements in one term intersect to nothing; with no other
	// term, PreFilter rejects the whole pod.
	*fields = []v1.NodeSelectorRequirement{
		{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
		{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}},
	}
	got = explain(t, c, p)
	expect(t, got, map[string]string{"a": "pod affinity terms conflict", "b": "pod affinity terms conflict"})
	if got["a"].Stage != "PreFilter" || got["a"].Plugin != "NodeAffinity" {
		t.Errorf("conflicting terms: %+v", got["a"])
	}
}

func TestVolumeZone(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	claim := func(name, volume, class string) *v1.PersistentVolumeClaim {
		c := &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       v1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: &class},
		}
		if volume != "" { // bound, as the PersistentVolume controller leaves it
			c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
		}
		return c
	}
	c := &Cluster{
		Nodes: []*v1.Node{
			node("a", map[string]string{v1.LabelTopologyZone: "zone-a"}),
			node("b", map[string]string{v1.LabelTopologyZone: "zone-b"}),
			node("none", nil),
		},
		PersistentVolumes: []*v1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{
			Name: "pv", Labels: map[string]string{v1.LabelFailureDomainBetaZone: "zone-a__zone-c"},
		}}},
		PersistentVolumeClaims: []*v1.PersistentVolumeClaim{claim("bound", "pv", "std"), claim("later", "", "wffc")},
		StorageClasses: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "wffc"}, Provisioner: "ebs.csi.aws.com",
			VolumeBindingMode: &wffc}},
	}
	withClaim := func(name string) *v1.Pod {
		p := pod("p", "", nil)
		p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		return p
	}
	// A beta-labelled PV matches the GA node label; nodes without any
	// topology label are exempt.
	expect(t, explain(t, c, withClaim("bound")), map[string]string{"a": "", "b": "no available volume zone", "none": ""})
	expect(t, explain(t, c, withClaim("later")), map[string]string{"a": "", "b": "", "none": ""})
	// A missing claim rejects the whole pod in PreFilter (VolumeRestrictions',
	// which runs before VolumeBinding's and VolumeZone's).
	got := explain(t, c, withClaim("missing"))
	expect(t, got, map[string]string{"a": `"missing" not found`})
	if got["a"].Stage != "PreFilter" || got["a"].Plugin != "VolumeRestrictions" {
		t.Errorf("missing claim: %+v", got["a"])
	}
}

func TestOnlyDoNotScheduleSpreadFilters(t *testing.T) {
	zoned := func(n, z string) *v1.Node { return node(n, map[string]string{v1.LabelTopologyZone: z}, "cpu", "8") }
	web := map[string]string{"app": "web"}
	c := &Cluster{
		Nodes: []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b")},
		Pods:  []*v1.Pod{pod("w1", "a1", web), pod("w2", "a2", web)},
	}
	p := pod("p", "", web)
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: web},
	}}
	expect(t, explain(t, c, p), map[string]string{"a1": "", "a2": "", "b1": ""})
	p.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = v1.DoNotSchedule
	expect(t, explain(t, c, p), map[string]string{"a1": "didn't match pod topology spread constraints", "b1": ""})
}

func TestFeasibleMatchesExplain(t *testing.T) {
	c, p := Generate(rand.New(rand.NewSource(7)))
	o, err := NewOracle(c)
	if err != nil {
		t.Fatal(err)
	}
	ok, why, err := o.Feasible(p)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := o.Explain(p)
	for n := range v {
		if ok[n] != v[n].Feasible || (!ok[n] && !reflect.DeepEqual(why[n], v[n].Reasons)) {
			t.Errorf("%s: Feasible (%v, %v) disagrees with Explain %+v", n, ok[n], why[n], v[n])
		}
	}
	if len(ok) != len(c.Nodes) {
		t.Errorf("%d verdicts for %d nodes", len(ok), len(c.Nodes))
	}
}

// TestOracleLeaksNoGoroutines guards the choice of a shared metrics
// recorder and unstarted informers: parity runs build thousands of oracles.
func TestOracleLeaksNoGoroutines(t *testing.T) {
	c, p := Generate(rand.New(rand.NewSource(1)))
	if _, err := NewOracle(c); err != nil { // first call starts the shared recorder
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range 200 {
		o, err := NewOracle(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Feasible(p); err != nil {
			t.Fatal(err)
		}
	}
	// The framework's own recorder goroutine notices the cancelled context
	// only between one-second sleeps, so allow it time to go.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); after > before+5 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before+5 {
		t.Errorf("goroutines grew from %d to %d over 200 oracles", before, after)
	}
}

func TestRejectsPodOnUnknownNode(t *testing.T) {
	c := &Cluster{Nodes: []*v1.Node{node("a", nil)}, Pods: []*v1.Pod{pod("p", "ghost", nil)}}
	if _, err := NewOracle(c); err == nil {
		t.Error("want an error for a pod bound to a node not in the cluster")
	}
}
