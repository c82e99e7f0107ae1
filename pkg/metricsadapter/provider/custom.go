package provider

import (
	"context"
	"fmt"
	"sort"
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
	if bad := values.unusable; len(bad.list) > 0 {
		p.reportUnusable("by_name", entry, info.Metric, bad)
		return nil, bad.err(entry, info.Metric)
	}
	ref, err := helpers.ReferenceFor(p.opts.Mapper, name, info)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("naming the kind of %s: %w", info.GroupResource, err))
	}
	v, ok := values.good[name.Name]
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
	items := make([]custom_metrics.MetricValue, 0, len(values.good))
	for _, n := range names {
		if v, ok := values.good[n]; ok {
			ref.Name = n
			items = append(items, metricValue(ref, info.Metric, v))
		}
	}
	if bad := values.unusable; len(bad.list) > 0 {
		// The others are served: the HPA counts the left-out objects as
		// missing, as it does for pods without samples, instead of losing
		// the metric for every pod.
		p.reportUnusable("by_selector", entry, info.Metric, bad)
		if len(items) == 0 {
			return nil, bad.err(entry, info.Metric)
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

// objectValues are the samples of one query by object: those that can be
// served, and the objects whose samples cannot.
type objectValues struct {
	good     map[string]objectValue
	unusable unusableObjects
}

// queryObjects runs the entry's rule for names and returns each object's
// sample. An object with several samples, or a value that is not a finite
// number, is unusable; the caller decides what that means for the request.
func (p *Provider) queryObjects(ctx context.Context, e customEntry, info cmprovider.CustomMetricInfo, namespace string,
	names []string, metricSelector labels.Selector) (objectValues, error) {
	req := customRequest(e, info, namespace, names, metricSelector)
	vec, q, err := p.runRule(ctx, e.rule, req, "metric "+info.Metric)
	if err != nil {
		return objectValues{}, err
	}
	return sortSamples(vec, e, info.Metric, names, q)
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

// sortSamples matches samples to objects by the object label. A result
// without that label cannot be matched to any object and fails the request:
// the rule's query aggregates the label away.
func sortSamples(vec []prom.Sample, e customEntry, metric string, names []string, q string) (objectValues, error) {
	out := objectValues{good: make(map[string]objectValue, len(vec))}
	counts := map[string]int{}
	var bad map[string]string // object -> why its value is unusable
	for i := range vec {
		s := &vec[i]
		n, ok := s.Label(e.objectLabel)
		if !ok {
			if len(names) != 1 || len(vec) != 1 {
				return objectValues{}, apierrors.NewInternalError(fmt.Errorf(
					"%s: metric %s: a result has no %s label, so it cannot be matched to an object; group the query by <<.GroupBy>> (query: %s)",
					e.rule.ID, metric, e.objectLabel, q))
			}
			n = names[0] // one object asked, one unlabelled answer
		}
		counts[n]++
		v, err := quantity(s.Value)
		if err != nil {
			if bad == nil {
				bad = map[string]string{}
			}
			bad[n] = err.Error()
			continue
		}
		out.good[n] = objectValue{value: v, at: s.Timestamp}
	}
	for n, c := range counts {
		if c > 1 {
			out.unusable.add(unusableObject{name: n, reason: reasonAmbiguous,
				why: fmt.Sprintf("%d samples; aggregate them in metricsQuery, for example avg(...) by (<<.GroupBy>>)", c)})
			delete(out.good, n)
			delete(bad, n)
		}
	}
	for n, why := range bad {
		out.unusable.add(unusableObject{name: n, reason: reasonNotANumber, why: why})
		delete(out.good, n)
	}
	list := out.unusable.list
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	out.unusable.query = q
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
