package scaledown

import (
	"time"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// groupOptions are the options a node group may override
// (snapshot.GroupOptions), resolved for one group: its own value where it
// sets one, the cluster's otherwise. Each source names where the value came
// from, for the messages that quote it.
type groupOptions struct {
	threshold, gpuThreshold   float64
	unneeded, unready         time.Duration
	ignoreDaemonSets          bool
	thresholdFrom, gpuFrom    string
	unneededFrom, unreadyFrom string
}

// forGroup resolves the options of g's nodes; g may be nil.
func (o *Options) forGroup(g *snapshot.NodeGroup) groupOptions {
	r := groupOptions{
		threshold: o.UtilizationThreshold, thresholdFrom: "--scale-down-utilization-threshold",
		gpuThreshold: o.GPUUtilizationThreshold, gpuFrom: "--scale-down-gpu-utilization-threshold",
		unneeded: o.UnneededTime, unneededFrom: "--scale-down-unneeded-time",
		unready: o.UnreadyTime, unreadyFrom: "--scale-down-unready-time",
		ignoreDaemonSets: o.IgnoreDaemonSetsUtilization,
	}
	if g == nil || g.Options == nil {
		return r
	}
	const from = "node group option "
	gopt := g.Options
	if v := gopt.ScaleDownUtilizationThreshold; v != nil {
		r.threshold, r.thresholdFrom = *v, from+"scaledownutilizationthreshold"
	}
	if v := gopt.ScaleDownGPUUtilizationThreshold; v != nil {
		r.gpuThreshold, r.gpuFrom = *v, from+"scaledowngpuutilizationthreshold"
	}
	if v := gopt.ScaleDownUnneededTime; v != nil {
		r.unneeded, r.unneededFrom = *v, from+"scaledownunneededtime"
	}
	if v := gopt.ScaleDownUnreadyTime; v != nil {
		r.unready, r.unreadyFrom = *v, from+"scaledownunreadytime"
	}
	if v := gopt.IgnoreDaemonSetsUtilization; v != nil {
		r.ignoreDaemonSets = *v
	}
	return r
}
