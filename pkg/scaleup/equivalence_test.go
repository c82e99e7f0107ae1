package scaleup

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// TestClassesOfPodsWithClaims: pods are one class only when each has its
// own unallocated claims of equal specs.
func TestClassesOfPodsWithClaims(t *testing.T) {
	s := snapshot.New()
	add := func(name string, count int64, allocated bool) {
		b := builder.Claim(name).Request("gpu", "gpu", count)
		if allocated {
			b.Allocated("n1", "gpu.nvidia.com", []string{"gpu-0"})
		}
		if err := s.SetResourceClaim(b.Build()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		add(fmt.Sprintf("own-%d", i), 1, false)
	}
	add("two", 2, false)
	add("held", 1, true)
	if err := s.SetResourceClaimTemplate(builder.ClaimTemplate("tmpl", builder.Claim("x").Request("gpu", "gpu", 1).Build())); err != nil {
		t.Fatal(err)
	}
	pod := func(name, claim string) *v1.Pod {
		return builder.Pod(name).CPU("1").ResourceClaim(claim).Build()
	}
	cases := []struct {
		name string
		pods []*v1.Pod
		want int
	}{
		{"own claims of one spec", []*v1.Pod{pod("a", "own-0"), pod("b", "own-1"), pod("c", "own-2")}, 1},
		{"a claim of another spec", []*v1.Pod{pod("a", "own-0"), pod("b", "two")}, 2},
		{"two pods of one claim", []*v1.Pod{pod("a", "own-0"), pod("b", "own-0")}, 2},
		{"an allocated claim", []*v1.Pod{pod("a", "own-0"), pod("b", "held")}, 2},
		{"claims still to be made from one template", []*v1.Pod{
			builder.Pod("a").CPU("1").ResourceClaimTemplate("gpu", "tmpl").Build(),
			builder.Pod("b").CPU("1").ResourceClaimTemplate("gpu", "tmpl").Build()}, 1},
		{"a pod without claims", []*v1.Pod{pod("a", "own-0"), builder.Pod("b").CPU("1").Build()}, 2},
	}
	for _, tc := range cases {
		classes, err := groupClasses(s, tc.pods)
		if err != nil {
			t.Fatal(err)
		}
		if len(classes) != tc.want {
			t.Errorf("%s: %d classes, want %d", tc.name, len(classes), tc.want)
		}
	}
}
