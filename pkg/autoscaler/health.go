package autoscaler

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// HealthUnready is the code of status.Health.Reason when too many nodes
// are unready to autoscale.
const HealthUnready = "TooManyUnreadyNodes"

// health applies the brake of the Cluster Autoscaler: with more than
// OkTotalUnreadyCount unready nodes that are also more than
// MaxTotalUnreadyPercentage percent of all registered nodes, something is
// wrong with the cluster (a zone outage, a network partition, a broken
// image), and adding or removing nodes would act on a false picture.
// Nodes still within their start-up time do not count as unready.
func (l *loop) healthOf() status.Health {
	total, unready := len(l.readiness), 0
	for _, r := range l.readiness {
		if r == clusterstate.NodeUnready {
			unready++
		}
	}
	if unready > l.opts.OkTotalUnreadyCount && float64(unready) > l.opts.MaxTotalUnreadyPercentage/100*float64(total) {
		return status.Health{Safe: false, Reason: HealthUnready, Message: fmt.Sprintf(
			"%d of %d nodes are unready, more than --ok-total-unready-count %d and --max-total-unready-percentage %g%%: not scaling until they recover",
			unready, total, l.opts.OkTotalUnreadyCount, l.opts.MaxTotalUnreadyPercentage)}
	}
	return status.Health{Safe: true}
}

// pendingUnsafe gives every pending pod the health brake as its reason.
func (l *loop) pendingUnsafe() {
	if len(l.in.Pending) == 0 {
		return
	}
	l.upPlan.Pending = append(l.upPlan.Pending, scaleup.PendingPods{Pods: l.in.Pending, Reasons: []scaleup.GroupReason{{
		Reason: scaleup.ReasonUnsafe, Message: "the cluster is unhealthy: " + l.health.Message}}})
}
