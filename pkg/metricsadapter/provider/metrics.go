package provider

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Metrics are the provider's own Prometheus metrics.
type Metrics struct {
	duration    *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	discoveries *prometheus.CounterVec
	known       *prometheus.GaugeVec
	unusableObj *prometheus.CounterVec
}

// NewMetrics creates the provider's metrics and registers them with reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "gpuscale", "metrics_adapter"
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "request_duration_seconds",
			Help:    "Time to answer a metrics request, by API (custom, external) and method (by_name, by_selector, external).",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"api", "method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "request_errors_total",
			Help: "Metrics requests that failed, by API, method and reason (NotFound, Timeout, ServiceUnavailable, InternalError, BadRequest).",
		}, []string{"api", "method", "reason"}),
		discoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "discoveries_total",
			Help: "Series listings, by trigger (relist, miss: an unknown metric was asked for) and result (ok, error).",
		}, []string{"trigger", "result"}),
		known: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "metrics",
			Help: "Metrics the adapter currently serves, by API.",
		}, []string{"api"}),
		unusableObj: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "unusable_objects_total",
			Help: "Objects left out of custom metrics answers because their samples cannot be served, by rule, metric and reason (ambiguous: several samples; not_a_number: NaN or infinite).",
		}, []string{"rule", "metric", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.errors, m.discoveries, m.known, m.unusableObj)
	}
	return m
}

func (m *Metrics) request(api, method string, began time.Time, err error) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(api, method).Observe(time.Since(began).Seconds())
	if err != nil {
		m.errors.WithLabelValues(api, method, string(apierrors.ReasonForError(err))).Inc()
	}
}

func (m *Metrics) discovery(trigger string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.discoveries.WithLabelValues(trigger, result).Inc()
}

func (m *Metrics) knownMetrics(custom, external int) {
	if m == nil {
		return
	}
	m.known.WithLabelValues("custom").Set(float64(custom))
	m.known.WithLabelValues("external").Set(float64(external))
}

func (m *Metrics) unusable(rule, metric, reason string) {
	if m == nil {
		return
	}
	m.unusableObj.WithLabelValues(rule, metric, reason).Inc()
}
