package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/metrics/pkg/apis/external_metrics"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

// GetExternalMetric returns the values of an external metric, one per
// series the rule's query returns, grouped by the labels the metric
// selector names.
func (p *Provider) GetExternalMetric(ctx context.Context, namespace string, metricSelector labels.Selector,
	info cmprovider.ExternalMetricInfo) (_ *external_metrics.ExternalMetricValueList, err error) {
	began := time.Now()
	defer func() { p.opts.Metrics.request("external", "external", began, err) }()

	e, err := p.externalEntry(ctx, info.Metric)
	if err != nil {
		return nil, err
	}
	vec, q, err := p.runRule(ctx, e.rule, externalRequest(e, namespace, metricSelector), "external metric "+info.Metric)
	if err != nil {
		return nil, err
	}
	if len(vec) == 0 {
		return nil, apierrors.NewNotFound(external_metrics.Resource(info.Metric),
			fmt.Sprintf("%s with selector %q in namespace %q", info.Metric, metricSelector, namespace))
	}
	items := make([]external_metrics.ExternalMetricValue, 0, len(vec))
	var bad []string
	for _, s := range vec {
		v, err := quantity(s.Value)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", metricString(s.Labels), err))
			continue
		}
		items = append(items, external_metrics.ExternalMetricValue{
			MetricName:   info.Metric,
			MetricLabels: sampleLabels(s.Labels),
			Timestamp:    metav1.NewTime(s.Timestamp.Time()),
			Value:        v,
		})
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: external metric %s: no usable value for %s (query: %s)",
			e.rule.ID, info.Metric, strings.Join(bad, "; "), q))
	}
	sort.SliceStable(items, func(i, j int) bool {
		return labels.Set(items[i].MetricLabels).String() < labels.Set(items[j].MetricLabels).String()
	})
	return &external_metrics.ExternalMetricValueList{Items: items}, nil
}

func sampleLabels(ls []prom.Label) map[string]string {
	out := make(map[string]string, len(ls))
	for _, l := range ls {
		if l.Name != model.MetricNameLabel {
			out[l.Name] = l.Value
		}
	}
	return out
}

// metricString writes labels as Prometheus does, {a="x", b="y"}.
func metricString(ls []prom.Label) string {
	m := make(model.Metric, len(ls))
	for _, l := range ls {
		m[model.LabelName(l.Name)] = model.LabelValue(l.Value)
	}
	return m.String()
}
