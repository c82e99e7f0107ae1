package gce

import (
	compute "google.golang.org/api/compute/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Managed-instance actions that end an instance, as listManagedInstances
// reports them; creating ones are in failures.go.
const (
	actionDeleting   = "DELETING"
	actionAbandoning = "ABANDONING"
	actionRecreating = "RECREATING"
	actionVerifying  = "VERIFYING"
)

// snapshotInstance is a managed instance as the core sees it: the
// providerID its node registers with (gce://project/zone/name) and a state
// from its current action. The API gives no creation time; the core dates
// an instance from when it first sees it without a node.
func snapshotInstance(ref InstanceRef, mi *compute.ManagedInstance) snapshot.Instance {
	st := snapshot.InstanceRunning
	switch mi.CurrentAction {
	case actionCreating, actionCreatingNoRetries, actionRecreating, actionVerifying:
		st = snapshot.InstanceCreating
	case actionDeleting, actionAbandoning:
		st = snapshot.InstanceDeleting
	}
	return snapshot.Instance{ProviderID: ref.ProviderID(), State: st}
}

// markDeleting notes instances the provider deleted, until the next listing
// shows them gone: they are no longer capacity waiting to join.
func (g *group) markDeleting(refs []InstanceRef) {
	gone := make(map[string]bool, len(refs))
	for _, r := range refs {
		gone[r.ProviderID()] = true
	}
	for i := range g.instances {
		if gone[g.instances[i].ProviderID] {
			g.instances[i].State = snapshot.InstanceDeleting
		}
	}
}
