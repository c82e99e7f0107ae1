package controller

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// An instance the plan took for unregistered (its Node not yet in a
// lagging informer cache) but that the API server knows as a node is not
// deleted: its pods would go with it. The others are.
func TestDeleteInstancesSparesRegisteredOnes(t *testing.T) {
	registered := groupNode("gpu-1", "g")
	registered.Spec.ProviderID = "sim://gpu-1"
	client := fake.NewClientset(registered)
	cp := &groupsProvider{groups: []string{"g"}}
	act := testActuator(client, cp, clocktesting.NewFakeClock(t0))
	err := act.DeleteInstances(context.Background(), autoscaler.DeleteInstances{Group: "g",
		ProviderIDs: []string{"sim://gpu-1", "sim://gpu-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cp.deletedNodes(); !slices.Equal(got, []string{"sim://gpu-2"}) {
		t.Errorf("deleted %v, want only the instance no node carries, sim://gpu-2", got)
	}
}

// growthProvider records IncreaseSize calls.
type growthProvider struct {
	groupsProvider
	increases []int
}

func (p *growthProvider) IncreaseSize(_ context.Context, _ string, delta int) error {
	p.increases = append(p.increases, delta)
	return nil
}

// A plan that deletes an unregistered instance and grows the group counted
// on the deleted slot; when the instance is kept (it registered after
// all), the scale-up of the same plan is smaller by one, so the target and
// the limits the plan checked are not overshot. The next plan starts
// afresh.
func TestKeptInstanceTakesBackItsSlot(t *testing.T) {
	registered := groupNode("gpu-1", "g")
	registered.Spec.ProviderID = "sim://gpu-1"
	cp := &growthProvider{groupsProvider: groupsProvider{groups: []string{"g"}}}
	act := testActuator(fake.NewClientset(registered), &cp.groupsProvider, clocktesting.NewFakeClock(t0))
	act.cp = cp
	ctx := context.Background()
	act.newPlan()
	if err := act.DeleteInstances(ctx, autoscaler.DeleteInstances{Group: "g", ProviderIDs: []string{"sim://gpu-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := act.ScaleUp(ctx, autoscaler.ScaleUp{Group: "g", Delta: 2, NewTarget: 3}); err != nil {
		t.Fatal(err)
	}
	act.newPlan()
	if err := act.ScaleUp(ctx, autoscaler.ScaleUp{Group: "g", Delta: 1, NewTarget: 4}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cp.increases, []int{1, 1}) {
		t.Errorf("increases %v, want [1 1]: one slot taken back in the plan that kept the instance, none in the next", cp.increases)
	}
}
