package autoscaler_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func owned(p *v1.Pod) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID("rs"), Controller: &yes}}
	return p
}

func gpuTemplate() *v1.Node {
	return builder.Node("gpu-t").CPU("32").Memory("128Gi").GPU(1).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
}

func newAutoscaler(t testing.TB, mutate ...func(*autoscaler.Options)) *autoscaler.Autoscaler {
	t.Helper()
	o := autoscaler.DefaultOptions()
	for _, m := range mutate {
		m(&o)
	}
	a, err := autoscaler.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func setGroup(t testing.TB, s *snapshot.Snapshot, id string, target int, tmpl *v1.Node) {
	t.Helper()
	if err := s.SetNodeGroup(builder.NodeGroup(id).Max(10).Target(target).Template(tmpl).Build()); err != nil {
		t.Fatal(err)
	}
}

func setTarget(t testing.TB, s *snapshot.Snapshot, id string, target int) {
	t.Helper()
	g := *s.NodeGroup(id)
	g.TargetSize = target
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
}

func step(t testing.TB, a *autoscaler.Autoscaler, in autoscaler.Input) autoscaler.Plan {
	t.Helper()
	plan, err := a.Step(in)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// summary renders a plan's actions in order, e.g.
// "scale-up gpu+1; decrease gpu-1; remove n1,n2".
func summary(p autoscaler.Plan) string {
	var parts []string
	for _, a := range p.Actions {
		switch a := a.(type) {
		case autoscaler.ScaleUp:
			parts = append(parts, fmt.Sprintf("scale-up %s+%d", a.Group, a.Delta))
		case autoscaler.DecreaseTarget:
			parts = append(parts, fmt.Sprintf("decrease %s-%d", a.Group, a.Delta))
		case autoscaler.DeleteInstances:
			parts = append(parts, fmt.Sprintf("delete-instances %s:%s", a.Group, strings.Join(a.ProviderIDs, ",")))
		case autoscaler.SoftTaint:
			parts = append(parts, "soft-taint "+strings.Join(a.Nodes, ","))
		case autoscaler.SoftUntaint:
			parts = append(parts, "soft-untaint "+strings.Join(a.Nodes, ","))
		case autoscaler.Cordon:
			parts = append(parts, "cordon "+strings.Join(a.Nodes, ","))
		case autoscaler.Uncordon:
			parts = append(parts, "uncordon "+strings.Join(a.Nodes, ","))
		case autoscaler.RemoveNodes:
			var names []string
			for _, r := range a.Removals {
				names = append(names, r.Node)
			}
			sort.Strings(names)
			parts = append(parts, "remove "+strings.Join(names, ","))
		}
	}
	return strings.Join(parts, "; ")
}

// only keeps the actions of one kind, by the summary's leading word.
func only(p autoscaler.Plan, kind string) string {
	var out []string
	for _, part := range strings.Split(summary(p), "; ") {
		if strings.HasPrefix(part, kind+" ") {
			out = append(out, part)
		}
	}
	return strings.Join(out, "; ")
}

// accepted is what an actuator reports for a plan's scale-ups when the
// cloud takes them.
func accepted(p autoscaler.Plan, at time.Time) []autoscaler.Outcome {
	var out []autoscaler.Outcome
	for _, a := range p.Actions {
		if su, ok := a.(autoscaler.ScaleUp); ok {
			out = append(out, autoscaler.ScaleUpResult{Group: su.Group, Delta: su.Delta, At: at})
		}
	}
	return out
}

func node(name string, created time.Time) *v1.Node {
	n := builder.Node(name).CPU("4").Memory("16Gi").Build()
	n.CreationTimestamp = metav1.NewTime(created)
	n.Spec.ProviderID = "test://" + name
	return n
}
