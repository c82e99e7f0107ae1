package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider/helpers"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/query"
)

// GetMetricByName returns the metric of one object.
func (p *Provider) GetMetricByName(ctx context.Context, name types.NamespacedName, info cmprovider.CustomMetricInfo,
	metricSelector labels.Selector) (_ *custom_metrics.MetricValue, err error) {
	began := time.Now()
	defer func() { p.opts.Metrics.request("custom", "by_name", began, err) }()

	entry, err := p.customEntry(ctx, info)
	if err != nil {
		return nil, err
	}
	values, err := p.queryObjects(ctx, entry, info, name.Namespace, []string{name.Name}, metricSelector)
	if err != nil {
		return nil, err
	}
	ref, err := helpers.ReferenceFor(p.opts.Mapper, name, info)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("naming the kind of %s: %w", info.GroupResource, err))
	}
	v, ok := values[name.Name]
	if !ok {
		return nil, cmprovider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	mv := metricValue(ref, info.Metric, v)
	return &mv, nil
}

// GetMetricBySelector returns the metric of every object the selector
// matches that has a value, in name order.
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector,
	info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValueList, err error) {
	began := time.Now()
	defer func() { p.opts.Metrics.request("custom", "by_selector", began, err) }()

	entry, err := p.customEntry(ctx, info)
	if err != nil {
		return nil, err
	}
	listNamespace := ""
	if info.Namespaced {
		listNamespace = namespace
	}
	names, err := p.opts.Lister.ListNames(ctx, info.GroupResource, listNamespace, selector)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("listing %s matching %q: %v", info.GroupResource, selector, err))
	}
	if len(names) == 0 {
		return &custom_metrics.MetricValueList{}, nil
	}
	values, err := p.queryObjects(ctx, entry, info, namespace, names, metricSelector)
	if err != nil {
		return nil, err
	}
	ref, err := helpers.ReferenceFor(p.opts.Mapper, types.NamespacedName{Namespace: listNamespace}, info)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("naming the kind of %s: %w", info.GroupResource, err))
	}
	items := make([]custom_metrics.MetricValue, 0, len(values))
	for _, n := range names {
		if v, ok := values[n]; ok {
			ref.Name = n
			items = append(items, metricValue(ref, info.Metric, v))
		}
	}
	if len(items) == 0 {
		return nil, cmprovider.NewMetricNotFoundForSelectorError(info.GroupResource, info.Metric, "*", selector)
	}
	return &custom_metrics.MetricValueList{Items: items}, nil
}

// objectValue is one object's sample.
type objectValue struct {
	value resource.Quantity
	at    model.Time
}

// queryObjects runs the entry's rule for names and returns each object's
// sample. Several samples for one object, or a value that is not a finite
// number, fail the request with the rule named.
func (p *Provider) queryObjects(ctx context.Context, e customEntry, info cmprovider.CustomMetricInfo, namespace string,
	names []string, metricSelector labels.Selector) (map[string]objectValue, error) {
	req := customRequest(e, info, namespace, names, metricSelector)
	vec, q, err := p.runRule(ctx, e.rule, req, "metric "+info.Metric)
	if err != nil {
		return nil, err
	}
	return objectValues(vec, e, info.Metric, names, q)
}

// runRule renders rule's query for req and runs it at the clock's time. It
// returns the samples and the query; errors are API errors naming the rule,
// what (the metric asked for) and the query.
func (p *Provider) runRule(ctx context.Context, rule *naming.Rule, req query.Request, what string) ([]prom.Sample, string, error) {
	args, err := query.Args(req)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(err.Error())
	}
	q, err := rule.RenderQuery(args)
	if err != nil {
		return nil, "", apierrors.NewInternalError(err)
	}
	vec, err := p.opts.Prometheus.Query(ctx, q, p.opts.Clock.Now())
	if err != nil {
		return nil, q, apiError(err, fmt.Sprintf("%s: %s", rule.ID, what), q)
	}
	return vec, q, nil
}

func objectValues(vec []prom.Sample, e customEntry, metric string, names []string, q string) (map[string]objectValue, error) {
	out := make(map[string]objectValue, len(vec))
	var counts map[string]int // only for objects with several samples
	var bad []string
	for i := range vec {
		s := &vec[i]
		n, ok := s.Label(e.objectLabel)
		if !ok {
			if len(names) != 1 || len(vec) != 1 {
				return nil, apierrors.NewInternalError(fmt.Errorf(
					"%s: metric %s: a result has no %s label, so it cannot be matched to an object; group the query by <<.GroupBy>> (query: %s)",
					e.rule.ID, metric, e.objectLabel, q))
			}
			n = names[0] // one object asked, one unlabelled answer
		}
		if _, dup := out[n]; dup {
			if counts == nil {
				counts = map[string]int{}
			}
			counts[n] = max(counts[n], 1) + 1 // the first sample and this one
		}
		q, err := quantity(s.Value)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", n, err))
		}
		out[n] = objectValue{value: q, at: s.Timestamp}
	}
	if len(counts) > 0 {
		dups := make([]string, 0, len(counts))
		for n, c := range counts {
			dups = append(dups, fmt.Sprintf("%s (%d samples)", n, c))
		}
		sort.Strings(dups)
		return nil, apierrors.NewInternalError(fmt.Errorf(
			"%s: metric %s: several samples for one object: %s; aggregate them in metricsQuery, for example avg(...) by (<<.GroupBy>>) (query: %s)",
			e.rule.ID, metric, strings.Join(dups, ", "), q))
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: metric %s: no usable value for %s (query: %s)",
			e.rule.ID, metric, strings.Join(bad, "; "), q))
	}
	return out, nil
}

func metricValue(ref custom_metrics.ObjectReference, metric string, v objectValue) custom_metrics.MetricValue {
	return custom_metrics.MetricValue{
		DescribedObject: ref,
		Metric:          custom_metrics.MetricIdentifier{Name: metric},
		Timestamp:       metav1.NewTime(v.at.Time()),
		Value:           v.value,
	}
}
