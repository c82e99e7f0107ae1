package slim

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// TestPodsOfOneTemplateShareTheirMaps: pods with equal labels and equal
// requests and limits hold one map of each after the transform, with the
// values they came with; a pod that differs keeps its own.
func TestPodsOfOneTemplateShareTheirMaps(t *testing.T) {
	s := New()
	mk := func(name, app, cpu string) *v1.Pod {
		p := builder.Pod(name).Namespace("serving").Label("app", app).Label("tier", "gpu").
			CPU(cpu).Memory("2Gi").GPU(1).Build()
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f"}}
		return p
	}
	a, b, c := mk("a", "vllm", "2"), mk("b", "vllm", "2000m"), mk("c", "triton", "2")
	want := []*v1.Pod{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for _, p := range []*v1.Pod{a, b, c} {
		if _, err := s.Transform(p); err != nil {
			t.Fatal(err)
		}
	}
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	if !same(a.Labels, b.Labels) {
		t.Error("two pods with equal labels hold two maps")
	}
	if same(a.Labels, c.Labels) {
		t.Error("pods with different labels share one map")
	}
	ra, rb, rc := a.Spec.Containers[0].Resources, b.Spec.Containers[0].Resources, c.Spec.Containers[0].Resources
	if !same(ra.Requests, rb.Requests) || !same(ra.Requests, rc.Requests) {
		t.Error("equal requests (2 and 2000m CPU) are held in separate maps")
	}
	for i, p := range []*v1.Pod{a, b, c} {
		if !reflect.DeepEqual(p.Labels, want[i].Labels) || p.Namespace != want[i].Namespace ||
			!reflect.DeepEqual(p.OwnerReferences, want[i].OwnerReferences) {
			t.Errorf("pod %s changed: labels %v owners %v", p.Name, p.Labels, p.OwnerReferences)
		}
		for n, q := range want[i].Spec.Containers[0].Resources.Requests {
			if got := p.Spec.Containers[0].Resources.Requests[n]; got.Cmp(q) != 0 {
				t.Errorf("pod %s: request %s is %s, was %s", p.Name, n, got.String(), q.String())
			}
		}
		if len(p.Spec.Containers[0].Resources.Requests) != len(want[i].Spec.Containers[0].Resources.Requests) {
			t.Errorf("pod %s: requests %v, were %v", p.Name, p.Spec.Containers[0].Resources.Requests, want[i].Spec.Containers[0].Resources.Requests)
		}
	}
}

// TestSharedTablesAreBounded: distinct values past the bound start the
// table over instead of growing it.
func TestSharedTablesAreBounded(t *testing.T) {
	s := New()
	for i := 0; i < MaxShared+10; i++ {
		v := fmt.Sprint(i)
		s.str(v)
		s.labelSet(map[string]string{"pod-template-hash": v})
		s.resourceList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(v)})
	}
	if len(s.strs) > MaxShared || len(s.labels) > MaxShared || len(s.resources) > MaxShared {
		t.Fatalf("tables hold %d strings, %d label sets, %d resource lists; the bound is %d",
			len(s.strs), len(s.labels), len(s.resources), MaxShared)
	}
	if len(s.strs) != 10 {
		t.Errorf("the string table holds %d after starting over, want the 10 added since", len(s.strs))
	}
}
