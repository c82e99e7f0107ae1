package aws

import (
	"sort"
	"strings"
	"time"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ProviderID is the providerID a node of the instance registers with:
// aws:///<zone>/<instance-id>, as the AWS cloud controller sets it.
func ProviderID(zone, id string) string { return "aws:///" + zone + "/" + id }

// instanceState maps an Auto Scaling lifecycle state to the core's; ok is
// false for warm-pool states, whose instances are not the group's capacity
// and must never be taken for instances that failed to join.
func instanceState(lifecycle string) (snapshot.InstanceState, bool) {
	switch {
	case strings.HasPrefix(lifecycle, "Warmed"):
		return 0, false
	case strings.HasPrefix(lifecycle, string(astypes.LifecycleStatePending)):
		return snapshot.InstanceCreating, true
	case strings.HasPrefix(lifecycle, "Terminat"), strings.HasPrefix(lifecycle, "Detach"):
		return snapshot.InstanceDeleting, true
	}
	// InService, Standby and the states around it: a launched instance.
	return snapshot.InstanceRunning, true
}

// snapshotInstances lists the group's instances for the core, by id, with
// the launch times the scaling activities gave (zero when unknown).
func (g *group) snapshotInstances() []snapshot.Instance {
	ids := make([]string, 0, len(g.instances))
	for id := range g.instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]snapshot.Instance, 0, len(ids))
	for _, id := range ids {
		inst := g.instances[id]
		st, ok := instanceState(inst.lifecycle)
		if !ok {
			continue
		}
		out = append(out, snapshot.Instance{ProviderID: ProviderID(inst.zone, id), State: st, CreatedAt: g.launched[id]})
	}
	return out
}

// launchedAt keeps the launch times of the cached group's instances that
// the fresh listing g still holds.
func (g *group) keepLaunchTimes(old *group) {
	if old == nil {
		return
	}
	for id, at := range old.launched {
		if _, ok := g.instances[id]; ok {
			g.setLaunched(id, at)
		}
	}
}

func (g *group) setLaunched(id string, at time.Time) {
	if g.launched == nil {
		g.launched = map[string]time.Time{}
	}
	g.launched[id] = at
}
