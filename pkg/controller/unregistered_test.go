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
