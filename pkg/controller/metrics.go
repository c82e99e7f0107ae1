package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics keep the upstream Cluster Autoscaler's metric names, so existing
// dashboards and alerts keep working.
type metrics struct {
	registry          *prometheus.Registry
	scaledUpNodes     prometheus.Counter
	scaledUpGPUNodes  prometheus.Counter
	scaledDownNodes   *prometheus.CounterVec
	scaledDownGPU     prometheus.Counter
	failedScaleUps    *prometheus.CounterVec
	nodes             *prometheus.GaugeVec
	gpuNodes          *prometheus.GaugeVec
	unschedulablePods prometheus.Gauge
	unneededNodes     prometheus.Gauge
	duration          *prometheus.HistogramVec
	lastActivity      *prometheus.GaugeVec
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
			Help: "Scale-ups that failed, by reason (timeout, cloud_provider_error)."}, []string{"reason"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "nodes_count",
			Help: "Nodes by state (ready, unready, unmanaged)."}, []string{"state"}),
		gpuNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "gpu_nodes_count",
			Help: "GPU nodes by state (ready: GPUs advertised; starting: waiting for the device plugin; overdue: waited past --max-node-startup-time)."}, []string{"state"}),
		unschedulablePods: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unschedulable_pods_count",
			Help: "Pods the scheduler could not place."}),
		unneededNodes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unneeded_nodes_count",
			Help: "Nodes that could be removed and are waiting."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "function_duration_seconds",
			Help:    "Duration of the loop (function=main) and its parts (snapshot, plan, actuate).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"function"}),
		lastActivity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_activity",
			Help: "Unix time of the last loop (main), scale-up and scale-down."}, []string{"activity"}),
	}
	m.registry.MustRegister(m.scaledUpNodes, m.scaledUpGPUNodes, m.scaledDownNodes, m.scaledDownGPU, m.failedScaleUps,
		m.nodes, m.gpuNodes, m.unschedulablePods, m.unneededNodes, m.duration, m.lastActivity,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
