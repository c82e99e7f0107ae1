package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// metrics keep the upstream Cluster Autoscaler's metric names, so existing
// dashboards and alerts keep working.
type metrics struct {
	registry            *prometheus.Registry
	scaledUpNodes       prometheus.Counter
	scaledUpGPUNodes    prometheus.Counter
	scaledDownNodes     *prometheus.CounterVec
	scaledDownGPU       prometheus.Counter
	failedScaleUps      *prometheus.CounterVec
	evictedPods         prometheus.Counter
	unregisteredRemoved prometheus.Counter
	errors              *prometheus.CounterVec
	nodes               *prometheus.GaugeVec
	gpuNodes            *prometheus.GaugeVec
	unschedulablePods   prometheus.Gauge
	unneededNodes       prometheus.Gauge
	safeToAutoscale     prometheus.Gauge
	duration            *prometheus.HistogramVec
	lastActivity        *prometheus.GaugeVec
}

func newMetrics() *metrics {
	const ns = "cluster_autoscaler"
	m := &metrics{
		registry: prometheus.NewRegistry(),
		scaledUpNodes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "scaled_up_nodes_total",
			Help: "Nodes added by scale-up."}),
		scaledUpGPUNodes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "scaled_up_gpu_nodes_total",
			Help: "GPU nodes added by scale-up."}),
		scaledDownNodes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "scaled_down_nodes_total",
			Help: "Nodes removed by scale-down, by reason (empty, underutilized, unready)."}, []string{"reason"}),
		scaledDownGPU: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "scaled_down_gpu_nodes_total",
			Help: "GPU nodes removed by scale-down."}),
		failedScaleUps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "failed_scale_ups_total",
			Help: "Scale-ups that failed, by reason (timeout, cloudProviderError)."}, []string{"reason"}),
		evictedPods: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "evicted_pods_total",
			Help: "Pods evicted by scale-down."}),
		unregisteredRemoved: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "old_unregistered_nodes_removed_count",
			Help: "Instances deleted because they never registered as nodes."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "errors_total",
			Help: "Errors, by type (apiServerError, cloudProviderError, scaleDownError, loopError)."}, []string{"type"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "nodes_count",
			Help: "Nodes by state (ready, unready, notStarted, unregistered, longUnregistered)."}, []string{"state"}),
		gpuNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "gpu_nodes_count",
			Help: "Accelerator nodes by state (awaiting: registered, devices not advertised yet; overdue: waited past --max-node-startup-time)."}, []string{"state"}),
		unschedulablePods: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unschedulable_pods_count",
			Help: "Pods the scheduler could not place."}),
		unneededNodes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unneeded_nodes_count",
			Help: "Nodes that could be removed and are waiting."}),
		safeToAutoscale: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_safe_to_autoscale",
			Help: "1 when the cluster is healthy enough to autoscale, 0 while the unready-node brake holds."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "function_duration_seconds",
			Help:    "Duration of the loop (function=main) and its parts (snapshot, plan, actuate).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"function"}),
		lastActivity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_activity",
			Help: "Unix time of the last loop (main), scale-up and scale-down."}, []string{"activity"}),
	}
	m.registry.MustRegister(m.scaledUpNodes, m.scaledUpGPUNodes, m.scaledDownNodes, m.scaledDownGPU, m.failedScaleUps,
		m.evictedPods, m.unregisteredRemoved, m.errors, m.nodes, m.gpuNodes, m.unschedulablePods, m.unneededNodes,
		m.safeToAutoscale, m.duration, m.lastActivity,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe sets the gauges from one loop's status.
func (m *metrics) observe(st status.Status, v *view) {
	c := st.Cluster.Nodes
	m.nodes.WithLabelValues("ready").Set(float64(c.Ready))
	m.nodes.WithLabelValues("unready").Set(float64(c.Unready))
	m.nodes.WithLabelValues("notStarted").Set(float64(c.NotStarted))
	m.nodes.WithLabelValues("unregistered").Set(float64(c.Unregistered))
	m.nodes.WithLabelValues("longUnregistered").Set(float64(c.LongUnregistered))
	m.nodes.WithLabelValues("unmanaged").Set(float64(st.Cluster.Unmanaged))
	m.gpuNodes.WithLabelValues("awaiting").Set(float64(c.AwaitingDevices))
	m.gpuNodes.WithLabelValues("overdue").Set(float64(c.DevicesOverdue))
	m.unschedulablePods.Set(float64(len(v.pending)))
	m.unneededNodes.Set(float64(st.Cluster.ScaleDown.Candidates))
	safe := 0.0
	if st.Cluster.Health.Safe {
		safe = 1
	}
	m.safeToAutoscale.Set(safe)
}
