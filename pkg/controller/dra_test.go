package controller

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The resource.k8s.io/v1 informers start only where the API server serves
// all four resources.
func TestServesDRA(t *testing.T) {
	all := []metav1.APIResource{{Name: "deviceclasses"}, {Name: "resourceclaims"}, {Name: "resourceclaimtemplates"}, {Name: "resourceslices"}}
	for _, tc := range []struct {
		name      string
		resources []*metav1.APIResourceList
		want      bool
	}{
		{"not served", nil, false},
		{"served", []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1", APIResources: all}}, true},
		{"only beta", []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1beta2", APIResources: all}}, false},
		{"slices missing", []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1", APIResources: all[:3]}}, false},
	} {
		c := fake.NewClientset()
		c.Discovery().(*fakediscovery.FakeDiscovery).Resources = tc.resources
		got, err := servesDRA(c.Discovery())
		if err != nil || got != tc.want {
			t.Errorf("%s: servesDRA = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// The mirror keeps the DRA objects as the caches hold them, loop after
// loop: a claim allocated to a bound pod keeps its devices when the pod
// changes (the snapshot releases the claim with the old pod), and objects
// deleted from the cluster leave the snapshot.
func TestMirrorKeepsDRAObjects(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l := newListers(f, true)
	r := f.Resource().V1()
	classes, templates := r.DeviceClasses().Informer().GetIndexer(), r.ResourceClaimTemplates().Informer().GetIndexer()
	claims, sls := r.ResourceClaims().Informer().GetIndexer(), r.ResourceSlices().Informer().GetIndexer()
	nodes, pods := f.Core().V1().Nodes().Informer().GetIndexer(), f.Core().V1().Pods().Informer().GetIndexer()
	cp := &groupsProvider{groups: []string{"a"}}
	m := newMirror(pending.Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sync := func(step string) {
		t.Helper()
		if _, err := m.sync(l, cp); err != nil {
			t.Fatal(err)
		}
		fresh, err := newMirror(pending.Options{}).sync(l, cp)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := draObjects(m.snap), draObjects(fresh.snap); got != want {
			t.Fatalf("%s: mirror\n%s\nfresh\n%s", step, got, want)
		}
	}
	gpu := structured.MakeDeviceID("gpu.example.com", "n1", "gpu0")

	must(nodes.Add(groupNode("n1", "a")))
	must(classes.Add(builder.DeviceClass("gpu.example.com", `device.driver == "gpu.example.com"`)))
	spec := builder.Claim("spec").Request("gpu", "gpu.example.com", 1).Build()
	must(templates.Add(builder.ClaimTemplate("one-gpu", spec)))
	must(sls.Add(builder.NodeSlice("n1", "gpu.example.com", builder.Devices("gpu", 2)...)))
	pod := builder.Pod("p1").CPU("1").OnNode("n1").ResourceClaimTemplate("gpu", "one-gpu").GeneratedClaim("gpu", "p1-gpu").Build()
	must(pods.Add(pod))
	claim := builder.Claim("p1-gpu").Request("gpu", "gpu.example.com", 1).OwnedBy(pod).Allocated("n1", "gpu.example.com", []string{"gpu0"}, pod).Build()
	must(claims.Add(claim))
	sync("first loop")
	if m.snap.DeviceClass("gpu.example.com") == nil || m.snap.ResourceClaimTemplate("default", "one-gpu") == nil ||
		m.snap.ResourceSlice("n1-gpu.example.com") == nil || m.snap.ResourceClaim("default", "p1-gpu") != claim {
		t.Fatalf("DRA objects missing from the snapshot:\n%s", draObjects(m.snap))
	}
	if !m.snap.DeviceAllocated(gpu) {
		t.Fatal("the claim's device is not allocated")
	}

	changed := pod.DeepCopy()
	changed.Labels = map[string]string{"version": "2"}
	must(pods.Update(changed))
	sync("pod changed")
	if !m.snap.DeviceAllocated(gpu) || m.snap.ResourceClaim("default", "p1-gpu") != claim {
		t.Fatalf("the claim lost its allocation when its pod changed: %+v", m.snap.ResourceClaim("default", "p1-gpu").Status)
	}

	must(pods.Delete(changed))
	must(claims.Delete(claim))
	must(sls.Delete(builder.NodeSlice("n1", "gpu.example.com")))
	must(templates.Delete(builder.ClaimTemplate("one-gpu", spec)))
	must(classes.Delete(builder.DeviceClass("gpu.example.com")))
	sync("objects deleted")
	if got := draObjects(m.snap); got != "{}" {
		t.Fatalf("deleted DRA objects still in the snapshot: %s", got)
	}
	if m.snap.DeviceAllocated(gpu) {
		t.Fatal("a deleted claim still holds its device")
	}
}

// draObjects writes the snapshot's DRA objects.
func draObjects(s *snapshot.Snapshot) string {
	var o struct {
		Classes   []*resourceapi.DeviceClass           `json:"classes,omitempty"`
		Templates []*resourceapi.ResourceClaimTemplate `json:"templates,omitempty"`
		Claims    []*resourceapi.ResourceClaim         `json:"claims,omitempty"`
		Slices    []*resourceapi.ResourceSlice         `json:"slices,omitempty"`
	}
	o.Classes, o.Claims, o.Slices = s.DeviceClasses(), s.ResourceClaims(), s.ResourceSlices()
	if t := s.ResourceClaimTemplate("default", "one-gpu"); t != nil {
		o.Templates = append(o.Templates, t)
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// Nodes whose accelerators are DRA devices count under their driver and
// their type (the type label, else the driver), as --gpu-total counts
// them; devices of other drivers make no accelerator node.
func TestGPULabelsOfDRANodes(t *testing.T) {
	plain := builder.Node("t").CPU("4").Build()
	labelled := builder.Node("t").CPU("4").Label("k8s.amazonaws.com/accelerator", "nvidia-a10g").Build()
	gpus := []*resourceapi.ResourceSlice{builder.NodeSlice("t", "gpu.nvidia.com", builder.Devices("gpu-", 2)...)}
	nics := []*resourceapi.ResourceSlice{builder.NodeSlice("t", "nic.example.com", builder.Devices("nic-", 2)...)}
	for _, tc := range []struct {
		name   string
		node   *v1.Node
		slices []*resourceapi.ResourceSlice
		want   string
	}{
		{"DRA GPUs", plain, gpus, "gpu.nvidia.com gpu.nvidia.com"},
		{"DRA GPUs with a type label", labelled, gpus, "gpu.nvidia.com nvidia-a10g"},
		{"NICs only", plain, nics, " "},
		{"device plugin GPUs", builder.Node("t").CPU("4").GPU(1).Build(), nil, "nvidia.com/gpu nvidia.com/gpu"},
	} {
		if got := strings.Join(gpuLabels(tc.node, tc.slices), " "); got != tc.want {
			t.Errorf("%s: labels %q, want %q", tc.name, got, tc.want)
		}
	}
}
