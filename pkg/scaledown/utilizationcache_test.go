package scaledown

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The cache must answer what nodeUtilization computes afresh through
// every change a loop or a simulation makes: pods bound and unbound,
// reverts, a terminating pod passing its grace period, other options.
func TestUtilizationCacheFollowsTheNode(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := snapshot.New()
	for _, n := range []string{"a", "b"} {
		if err := s.AddNode(builder.Node(n).CPU("4").Memory("16Gi").Build()); err != nil {
			t.Fatal(err)
		}
	}
	add := func(p *v1.Pod) {
		t.Helper()
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	add(builder.Pod("one").CPU("1").OnNode("a").Build())
	var cache utilizationCache
	o := utilizationOptions{}
	check := func(step string, o utilizationOptions, at time.Time, want float64) {
		t.Helper()
		got := cache.of(s.Node("a"), o, at)
		fresh, _ := nodeUtilization(s.Node("a"), o, at)
		if got != fresh || got.CPU != want {
			t.Errorf("%s: cached %+v, afresh %+v, want cpu %.2f", step, got, fresh, want)
		}
	}
	check("first", o, now, 0.25)
	if _, ok := cache.nodes.Get(s.Node("a"), utilizationKey{s.Node("a").Stamp(), o}); !ok {
		t.Fatal("an unchanged node is not kept")
	}
	add(builder.Pod("other").CPU("2").OnNode("b").Build())
	if _, ok := cache.nodes.Get(s.Node("a"), utilizationKey{s.Node("a").Stamp(), o}); !ok {
		t.Error("a pod bound to another node changed this node's stamp")
	}
	check("another node changed", o, now, 0.25)
	add(builder.Pod("two").CPU("2").OnNode("a").Build())
	check("a pod bound", o, now, 0.75)

	s.Fork()
	if err := s.RemovePod("default", "one"); err != nil {
		t.Fatal(err)
	}
	check("a pod unbound in a fork", o, now, 0.5)
	if err := s.Revert(); err != nil {
		t.Fatal(err)
	}
	check("reverted", o, now, 0.75)

	ds := builder.Pod("agent").CPU("500m").OnNode("a").Build()
	yes := true
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent", Controller: &yes}}
	add(ds)
	check("with a DaemonSet pod", o, now, 3.5/4)
	check("DaemonSet pods left out", utilizationOptions{ignoreDaemonSets: true}, now, 3/3.5)
	check("DaemonSet pods counted again", o, now, 3.5/4)

	term := builder.Pod("terminating").CPU("1").OnNode("a").Build()
	at := metav1.NewTime(now)
	grace := int64(30)
	term.DeletionTimestamp, term.Spec.TerminationGracePeriodSeconds = &at, &grace
	if err := s.RemovePod("default", "agent"); err != nil {
		t.Fatal(err)
	}
	add(term)
	check("a terminating pod within its grace", o, now, 1)
	check("the same pod long past its grace", o, now.Add(time.Hour), 0.75)

	cache.nodes.EndPass()
	cache.nodes.EndPass() // a pass that looked nothing up
	if n := cache.nodes.Len(); n != 0 {
		t.Errorf("%d nodes kept after a pass that did not look them up", n)
	}
}
