package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the client's own Prometheus metrics.
type Metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// NewMetrics creates the client's metrics and registers them with reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "gpuscale",
			Subsystem: "metrics_adapter",
			Name:      "prometheus_query_duration_seconds",
			Help:      "Latency of calls from the metrics adapter to Prometheus, by endpoint (query, series).",
			Buckets:   []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"endpoint"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "gpuscale",
			Subsystem: "metrics_adapter",
			Name:      "prometheus_errors_total",
			Help:      "Failed calls from the metrics adapter to Prometheus, by endpoint and kind (timeout, unavailable, bad_query, canceled).",
		}, []string{"endpoint", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.errors)
	}
	return m
}

func (m *Metrics) observe(endpoint string, began time.Time, err error) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(endpoint).Observe(time.Since(began).Seconds())
	if err != nil {
		m.errors.WithLabelValues(endpoint, string(KindOf(err))).Inc()
	}
}
