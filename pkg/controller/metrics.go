package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// metrics keep the upstream Cluster Autoscaler's metric names, labels and
// label values, so existing dashboards and alerts keep working.
type metrics struct {
	registry            *prometheus.Registry
	perGroup            bool
	scaledUpNodes       *prometheus.CounterVec
	scaledUpGPUNodes    *prometheus.CounterVec
	scaledDownNodes     *prometheus.CounterVec
	scaledDownGPU       *prometheus.CounterVec
	failedScaleUps      *prometheus.CounterVec
	failedCreations     *prometheus.CounterVec
	evictedPods         *prometheus.CounterVec
	unregisteredRemoved prometheus.Counter
	errors              *prometheus.CounterVec
	nodes               *prometheus.GaugeVec
	gpuNodes            *prometheus.GaugeVec
	nodeGroups          *prometheus.GaugeVec
	unschedulablePods   *prometheus.GaugeVec
	unneededNodes       prometheus.Gauge
	unremovableNodes    *prometheus.GaugeVec
	scaleDownCooldown   prometheus.Gauge
	pendingDeletions    prometheus.Gauge
	safeToAutoscale     prometheus.Gauge
	maxNodes            prometheus.Gauge
	cpuLimits           *prometheus.GaugeVec
	memoryLimits        *prometheus.GaugeVec
	groupMin            *prometheus.GaugeVec
	groupMax            *prometheus.GaugeVec
	groupTarget         *prometheus.GaugeVec
	groupHealthy        *prometheus.GaugeVec
	groupBackoff        *prometheus.GaugeVec
	duration            *prometheus.HistogramVec
	lastActivity        *prometheus.GaugeVec
	// unhealthyNodes is node repair's account: 1 per unhealthy node.
	unhealthyNodes *prometheus.GaugeVec
}

func newMetrics() *metrics {
	const ns = "cluster_autoscaler"
	gpuLabels := []string{"gpu_resource_name", "gpu_name"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	one := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help})
	}
	m := &metrics{
		registry:         prometheus.NewRegistry(),
		scaledUpNodes:    counter("scaled_up_nodes_total", "Nodes added by scale-up, by accelerator.", gpuLabels...),
		scaledUpGPUNodes: counter("scaled_up_gpu_nodes_total", "Accelerator nodes added by scale-up (kept for older dashboards).", gpuLabels...),
		scaledDownNodes: counter("scaled_down_nodes_total", "Nodes removed, by reason (empty, underutilized, unready, consolidated) and accelerator.",
			append([]string{"reason"}, gpuLabels...)...),
		scaledDownGPU: counter("scaled_down_gpu_nodes_total", "Accelerator nodes removed (kept for older dashboards).",
			append([]string{"reason"}, gpuLabels...)...),
		failedScaleUps: counter("failed_scale_ups_total", "Scale-ups that failed, by reason (timeout, cloudProviderError) and accelerator.",
			append([]string{"reason"}, gpuLabels...)...),
		failedCreations: counter("failed_node_creations_total", "Nodes the cloud failed to create, by reason.", "reason"),
		evictedPods:     counter("evicted_pods_total", "Pods evicted by scale-down, by result (succeeded, failed).", "eviction_result"),
		unregisteredRemoved: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "old_unregistered_nodes_removed_count",
			Help: "Instances deleted because they never registered as nodes."}),
		errors:            counter("errors_total", "Loop errors, by type (apiCallError, cloudProviderError, internalError).", "type"),
		nodes:             gauge("nodes_count", "Nodes by state (ready, unready, notStarted, unregistered, longUnregistered, unmanaged).", "state"),
		gpuNodes:          gauge("gpu_nodes_count", "Accelerator nodes by state (awaiting: devices not advertised yet; overdue: past --max-node-startup-time).", "state"),
		nodeGroups:        gauge("node_groups_count", "Node groups managed, by type.", "node_group_type"),
		unschedulablePods: gauge("unschedulable_pods_count", "Pods the scheduler could not place.", "type"),
		unneededNodes:     one("unneeded_nodes_count", "Nodes that could be removed and are waiting."),
		unremovableNodes:  gauge("unremovable_nodes_count", "Nodes kept, by reason.", "reason"),
		scaleDownCooldown: one("scale_down_in_cooldown", "1 while scale-down waits after a scale-up, a removal or a failure."),
		pendingDeletions:  one("pending_node_deletions", "Node removals in progress."),
		safeToAutoscale:   one("cluster_safe_to_autoscale", "1 when the cluster is healthy enough to autoscale, 0 while the unready-node brake holds."),
		maxNodes:          one("max_nodes_count", "--max-nodes-total (0: no limit)."),
		cpuLimits:         gauge("cpu_limits_cores", "--cores-total, by direction (minimum, maximum).", "direction"),
		memoryLimits:      gauge("memory_limits_bytes", "--memory-total in bytes, by direction (minimum, maximum).", "direction"),
		groupMin:          gauge("node_group_min_count", "Minimum size of a node group.", "node_group"),
		groupMax:          gauge("node_group_max_count", "Maximum size of a node group.", "node_group"),
		groupTarget:       gauge("node_group_target_count", "Target size of a node group.", "node_group"),
		groupHealthy:      gauge("node_group_healthiness", "1 when the node group is healthy enough to autoscale.", "node_group"),
		groupBackoff:      gauge("node_group_backoff_status", "1 while the node group is backed off, by reason.", "node_group", "reason"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "function_duration_seconds",
			Help:    "Duration of the loop (main) and its parts (updateClusterState, plan, actuate).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"function"}),
		lastActivity: gauge("last_activity", "Unix time of the last loop (main), scale-up and scale-down.", "activity"),
		unhealthyNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "gpuscale", Name: "unhealthy_node",
			Help: "1 per node node repair found unhealthy, with why (reason, condition) and its state (Held: held, Repairing, Removing)."},
			[]string{"node", "node_group", "reason", "condition", "state", "held"}),
	}
	m.registry.MustRegister(m.scaledUpNodes, m.scaledUpGPUNodes, m.scaledDownNodes, m.scaledDownGPU, m.failedScaleUps,
		m.failedCreations, m.evictedPods, m.unregisteredRemoved, m.errors, m.nodes, m.gpuNodes, m.nodeGroups,
		m.unschedulablePods, m.unneededNodes, m.unremovableNodes, m.scaleDownCooldown, m.pendingDeletions,
		m.safeToAutoscale, m.maxNodes, m.cpuLimits, m.memoryLimits, m.duration, m.lastActivity, m.unhealthyNodes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// emitPerGroup registers the per-group gauges (--emit-per-nodegroup-metrics).
func (m *metrics) emitPerGroup() {
	m.perGroup = true
	m.registry.MustRegister(m.groupMin, m.groupMax, m.groupTarget, m.groupHealthy, m.groupBackoff)
}

// observe sets the gauges from one loop's status.
func (m *metrics) observe(st status.Status, v *view, lim limits.Limits) {
	c := st.Cluster.Nodes
	for state, n := range map[string]int{"ready": c.Ready, "unready": c.Unready, "notStarted": c.NotStarted,
		"unregistered": c.Unregistered, "longUnregistered": c.LongUnregistered, "unmanaged": st.Cluster.Unmanaged} {
		m.nodes.WithLabelValues(state).Set(float64(n))
	}
	m.gpuNodes.WithLabelValues("awaiting").Set(float64(c.AwaitingDevices))
	m.gpuNodes.WithLabelValues("overdue").Set(float64(c.DevicesOverdue))
	m.nodeGroups.WithLabelValues("autoscaled").Set(float64(len(st.NodeGroups)))
	m.unschedulablePods.WithLabelValues("unschedulable").Set(float64(len(v.pending)))
	m.unneededNodes.Set(float64(st.Cluster.ScaleDown.Candidates))
	m.pendingDeletions.Set(float64(c.BeingDeleted))
	m.safeToAutoscale.Set(flag(st.Cluster.Health.Safe))
	m.scaleDownCooldown.Set(flag(st.Time.Before(st.Cluster.ScaleDown.CooldownUntil)))
	m.unremovableNodes.Reset()
	for _, n := range st.Nodes {
		if n.State == status.NodeKept {
			m.unremovableNodes.WithLabelValues(n.Reason).Inc()
		}
	}
	m.unhealthyNodes.Reset()
	if st.Repair != nil {
		for _, n := range st.Repair.Nodes {
			m.unhealthyNodes.WithLabelValues(n.Name, n.Group, n.Reason, n.Condition, n.State, n.Held).Set(1)
		}
	}
	m.maxNodes.Set(float64(lim.MaxNodesTotal))
	m.cpuLimits.WithLabelValues("minimum").Set(float64(lim.Cores.Min))
	m.cpuLimits.WithLabelValues("maximum").Set(float64(lim.Cores.Max))
	m.memoryLimits.WithLabelValues("minimum").Set(float64(lim.MemoryGiB.Min) * (1 << 30))
	m.memoryLimits.WithLabelValues("maximum").Set(float64(lim.MemoryGiB.Max) * (1 << 30))
	if !m.perGroup {
		return
	}
	m.groupBackoff.Reset()
	for _, g := range st.NodeGroups {
		m.groupMin.WithLabelValues(g.ID).Set(float64(g.Min))
		m.groupMax.WithLabelValues(g.ID).Set(float64(g.Max))
		m.groupTarget.WithLabelValues(g.ID).Set(float64(g.Target))
		m.groupHealthy.WithLabelValues(g.ID).Set(flag(g.Nodes.Registered == 0 || g.Nodes.Unready*2 <= g.Nodes.Registered))
		backedOff := g.ScaleUp.State == status.ActivityBackoff
		m.groupBackoff.WithLabelValues(g.ID, g.ScaleUp.Reason).Set(flag(backedOff))
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gpuLabels are the gpu_resource_name and gpu_name labels of a node or a
// group's template: its first accelerator resource and its accelerator
// type; for a node whose accelerators are DRA devices (slices, the
// group's template slices), the driver and the type as --gpu-total counts
// them (limits.TemplateTotals: the node's type label, else the driver);
// empty for nodes without accelerators.
func gpuLabels(n *v1.Node, slices []*resourceapi.ResourceSlice) []string {
	if n == nil {
		return []string{"", ""}
	}
	for _, rl := range []v1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
		for name, q := range rl {
			if gpu.IsGPUResource(name) && !q.IsZero() {
				return []string{string(name), limits.Type(n)}
			}
		}
	}
	for _, sl := range slices {
		if gpu.IsAcceleratorDriver(sl.Spec.Driver) && len(sl.Spec.Devices) > 0 {
			typ := limits.Type(n)
			if typ == string(gpu.ResourceName) {
				typ = sl.Spec.Driver
			}
			return []string{sl.Spec.Driver, typ}
		}
	}
	if gpu.HasAcceleratorLabel(n) {
		return []string{string(gpu.ResourceName), limits.Type(n)}
	}
	return []string{"", ""}
}
