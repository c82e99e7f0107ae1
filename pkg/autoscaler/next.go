package autoscaler

import (
	"time"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
)

// nextDecision is the earliest time after now at which one of the loop's
// timers fires, so that a loop on unchanged inputs could decide
// differently: an unneeded node's wait ending, scale-down's cooldown
// ending, a scale-up timing out, a backoff ending, an unregistered
// instance becoming removable, a starting node running out of start-up
// time, a new pod coming of age for --new-pod-scale-up-delay, or a
// capacity block's drain lead beginning, or the next demand reading of a
// forecast workload. Zero when
// none is pending.
func (l *loop) nextDecision() time.Time {
	now := l.in.Now
	var at time.Time
	consider := func(t time.Time) {
		if t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, u := range l.downPlan.Unneeded {
		if u.Wait > 0 {
			consider(now.Add(u.Wait))
		}
	}
	if len(l.downPlan.Unneeded) > 0 {
		consider(l.downPlan.CooldownUntil)
	}
	for _, t := range l.state.Deadlines(now) {
		consider(t)
	}
	for _, t := range l.consolidationDeadlines() {
		consider(t)
	}
	for _, t := range l.repairDeadlines() {
		consider(t)
	}
	for _, t := range l.blockLeadStarts() {
		consider(t)
	}
	if len(l.forecasts) > 0 {
		consider(now.Add(l.opts.Forecast.Interval))
	}
	startup := l.opts.ClusterState.MaxNodeStartupTime
	for i, ni := range l.nodes {
		if r := l.readiness[i]; r == clusterstate.NodeStarting || r == clusterstate.NodeAwaitingDevices {
			consider(ni.Node.CreationTimestamp.Add(startup))
		}
	}
	for _, t := range l.req.deadlines {
		consider(t)
	}
	if d := l.opts.ScaleUp.NewPodScaleUpDelay; d > 0 {
		for _, p := range l.in.Pending {
			consider(p.CreationTimestamp.Add(d))
		}
	}
	return at
}
