package autoscaler_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The priority expander's configuration comes in with each Input, so a
// record of the loop holds it; nil keeps the one in force.
func TestPrioritiesComeInThroughTheInput(t *testing.T) {
	parse := func(text string) *expander.Priorities {
		p, err := expander.ParsePriorities(text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := newAutoscaler(t, func(o *autoscaler.Options) {
		o.ScaleUp.Expander = "priority"
		o.ScaleUp.Priorities = parse("10:\n  - ^cpu-a$\n")
	})
	cluster := func() *snapshot.Snapshot {
		s := snapshot.New()
		tmpl := builder.Node("t").CPU("4").Memory("16Gi").Build()
		setGroup(t, s, "cpu-a", 0, tmpl)
		setGroup(t, s, "cpu-b", 0, tmpl)
		return s
	}
	pending := []*v1.Pod{owned(builder.Pod("p").CPU("1").Build())}
	if got := only(step(t, a, autoscaler.Input{Now: t0, Snapshot: cluster(), Pending: pending}), "scale-up"); got != "scale-up cpu-a+1" {
		t.Fatalf("options' priorities: %q, want scale-up cpu-a+1", got)
	}
	b := newAutoscaler(t, func(o *autoscaler.Options) {
		o.ScaleUp.Expander = "priority"
		o.ScaleUp.Priorities = parse("10:\n  - ^cpu-a$\n")
	})
	in := autoscaler.Input{Now: t0, Snapshot: cluster(), Pending: pending, Priorities: parse("10:\n  - ^cpu-b$\n")}
	if got := only(step(t, b, in), "scale-up"); got != "scale-up cpu-b+1" {
		t.Fatalf("the Input's priorities: %q, want scale-up cpu-b+1", got)
	}
}

func mustPriorities(t *testing.T, text string) *expander.Priorities {
	t.Helper()
	p, err := expander.ParsePriorities(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
