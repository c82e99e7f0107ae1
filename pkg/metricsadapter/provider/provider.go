// Package provider serves custom and external metrics from Prometheus for
// sigs.k8s.io/custom-metrics-apiserver. It discovers metrics from the
// rules' series queries (on an interval, and at once when an unknown metric
// is asked for), lists the requested objects, renders the rule's query and
// turns the samples into metric values that keep their own timestamps.
// Ambiguity is refused rather than guessed: several samples for one object,
// NaN or infinite values are errors that name the rule.
package provider

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/model"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

// Prometheus is what the provider needs from Prometheus; *prom.Client
// implements it.
type Prometheus interface {
	Series(ctx context.Context, match string, start, end time.Time) ([]model.LabelSet, error)
	Query(ctx context.Context, query string, ts time.Time) ([]prom.Sample, error)
}

// ObjectLister lists the names of the objects of a resource that match a
// label selector, sorted. namespace is empty for cluster-scoped resources.
type ObjectLister interface {
	ListNames(ctx context.Context, gr schema.GroupResource, namespace string, selector labels.Selector) ([]string, error)
}

// Options configure a Provider.
type Options struct {
	// Rules and ExternalRules are the compiled rules, in configuration order.
	Rules, ExternalRules []*naming.Rule
	// Prometheus answers series and instant queries.
	Prometheus Prometheus
	// Mapper normalizes resources and names their kinds.
	Mapper apimeta.RESTMapper
	// Lister lists the objects a selector request covers.
	Lister ObjectLister
	// Clock stamps queries and paces refreshes; default the real clock.
	Clock clock.WithTicker
	// RelistInterval is how often every rule's series are listed again.
	// Default 10m, as prometheus-adapter's --metrics-relist-interval.
	RelistInterval time.Duration
	// MetricsMaxAge is how far back series are listed. Default RelistInterval.
	MetricsMaxAge time.Duration
	// MinRediscoverInterval is the least time between two refreshes that
	// lookups of unknown metrics trigger. Default 1s.
	MinRediscoverInterval time.Duration
	// Logger receives discovery failures; default discards.
	Logger logr.Logger
	// Metrics records request latency and errors; nil records nothing.
	Metrics *Metrics
}

// Provider implements custom-metrics-apiserver's MetricsProvider.
type Provider struct {
	opts Options
	reg  *registry
}

var _ cmprovider.MetricsProvider = (*Provider)(nil)

// New builds a Provider; call Run to keep its metric list fresh.
func New(o Options) (*Provider, error) {
	if o.Prometheus == nil || o.Mapper == nil || o.Lister == nil {
		return nil, errors.New("metrics provider: Prometheus, Mapper and Lister must be set")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.RelistInterval <= 0 {
		o.RelistInterval = 10 * time.Minute
	}
	if o.MetricsMaxAge <= 0 {
		o.MetricsMaxAge = o.RelistInterval
	}
	if o.MinRediscoverInterval <= 0 {
		o.MinRediscoverInterval = time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return &Provider{opts: o, reg: newRegistry(o)}, nil
}

// Refresh lists every rule's series now. A rule whose listing fails keeps
// the metrics it had; the first failure is returned.
func (p *Provider) Refresh(ctx context.Context) error {
	return p.reg.refreshAll(ctx)
}

// Run refreshes at once and then every RelistInterval until ctx ends.
func (p *Provider) Run(ctx context.Context) {
	_ = p.Refresh(ctx) // failures are logged per rule; the next tick retries
	t := p.opts.Clock.NewTicker(p.opts.RelistInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			_ = p.Refresh(ctx)
		}
	}
}

// ListAllMetrics lists the custom metrics known now, sorted.
func (p *Provider) ListAllMetrics() []cmprovider.CustomMetricInfo {
	return p.reg.listCustom()
}

// ListAllExternalMetrics lists the external metrics known now, sorted.
func (p *Provider) ListAllExternalMetrics() []cmprovider.ExternalMetricInfo {
	return p.reg.listExternal()
}

// customEntry finds a custom metric, discovering once on a miss.
func (p *Provider) customEntry(ctx context.Context, info cmprovider.CustomMetricInfo) (customEntry, error) {
	if e, ok := p.reg.lookupCustom(info); ok {
		return e, nil
	}
	err := p.reg.discoverOnMiss(ctx, info.Metric, false)
	if e, ok := p.reg.lookupCustom(info); ok {
		return e, nil
	}
	if err != nil {
		// Prometheus could not say whether the metric exists.
		return customEntry{}, apiError(err, "discovering metric "+info.Metric, "")
	}
	return customEntry{}, cmprovider.NewMetricNotFoundError(info.GroupResource, info.Metric)
}

// externalEntry finds an external metric, discovering once on a miss.
func (p *Provider) externalEntry(ctx context.Context, metric string) (externalEntry, error) {
	if e, ok := p.reg.lookupExternal(metric); ok {
		return e, nil
	}
	err := p.reg.discoverOnMiss(ctx, metric, true)
	if e, ok := p.reg.lookupExternal(metric); ok {
		return e, nil
	}
	if err != nil {
		// Prometheus could not say whether the metric exists.
		return externalEntry{}, apiError(err, "discovering metric "+metric, "")
	}
	return externalEntry{}, cmprovider.NewMetricNotFoundError(schema.GroupResource{Group: "external.metrics.k8s.io"}, metric)
}
