package scaleup

import (
	"time"

	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/expander"
)

// Plan is what one scale-up pass decided.
type Plan struct {
	// ScaleUps are the target-size increases to make, sorted by group.
	ScaleUps []ScaleUp
	// Triggered are the pods the scale-ups are for.
	Triggered []*v1.Pod
	// WillSchedule are pending pods that fit on existing or upcoming nodes.
	WillSchedule []*v1.Pod
	// Placements say where each WillSchedule pod fits, in the same order;
	// scale-down must leave room for the ones on registered nodes.
	Placements []string
	// Pending are pods no scale-up helps, with the reason per group.
	Pending []PendingPods
	// Options are the groups the expanders weighed for the scale-up and
	// what they made of each.
	Options []expander.Verdict
	// Starting are registered nodes still starting (not Ready, startup
	// taints, GPUs not advertised), simulated as their template would be
	// once started; AwaitingGPU are those of them waiting for their device
	// plugin. GPUOverdue have waited longer than --max-node-startup-time
	// for their GPUs and no longer count.
	Starting    []string
	AwaitingGPU []string
	GPUOverdue  []string
	// Gangs say what each gang of the input got, in input order (check-only
	// gangs first).
	Gangs []GangResult
	// Held are the pods of gangs and bookings placed on nodes, for
	// scale-down to leave their room.
	Held []HeldPod
}

// ScaleUp grows one group.
type ScaleUp struct {
	Group     string
	Delta     int
	NewTarget int
	// Pods is how many pending pods the new nodes are expected to take.
	Pods int
	// Why tells how the group was chosen.
	Why string
	// Gangs are the keys of the gangs some of these nodes are for.
	Gangs []string
	// Queued, when set, asks for the nodes through the cloud's queue (all
	// at once, when it has them) rather than by raising the target.
	Queued *QueuedScaleUp
}

// QueuedScaleUp is what a queued request to the cloud carries.
type QueuedScaleUp struct {
	// Name names the cloud's request (one per ProvisioningRequest).
	Name string
	// RunDuration bounds the nodes' lives; 0 leaves it to the cloud.
	RunDuration time.Duration
}

// PendingPods are equivalent pods left pending, and why each group could
// not help them.
type PendingPods struct {
	Pods    []*v1.Pod
	Reasons []GroupReason
}

// GroupReason is why one group (or "" for the whole cluster) cannot help.
type GroupReason struct {
	Group string
	// Reason is a stable code; Message says the same for people, with the
	// numbers and the flag to change.
	Reason  Reason
	Message string
	// Predicate names the scheduling check a template node failed, for
	// ReasonNotFit.
	Predicate string
}

// Message joins the reasons the way an event shows them.
func (p PendingPods) Message() string {
	parts := make([]string, 0, len(p.Reasons))
	for _, r := range p.Reasons {
		if r.Group == "" {
			parts = append(parts, r.Message)
		} else {
			parts = append(parts, fmt.Sprintf("node group %s: %s", r.Group, r.Message))
		}
	}
	return strings.Join(parts, "; ")
}

func sortReasons(rs []GroupReason) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Group < rs[j].Group })
}
