package explain

import (
	"context"
	"errors"
	"fmt"
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/provider"
)

// RuleFinder says which metrics-adapter rule serves a metric and the
// PromQL a request for it runs (AdapterRules is the one over the
// adapter's own discovery code).
type RuleFinder interface {
	// Custom finds the rule of a custom metric of objects of a kind.
	Custom(ctx context.Context, m CustomMetric) (RuleAnswer, error)
	// External finds the rule of an external metric.
	External(ctx context.Context, namespace, metric string, selector labels.Selector) (RuleAnswer, error)
}

// CustomMetric is a custom metrics request as the HPA controller makes it.
type CustomMetric struct {
	Namespace string
	// Kind is the objects' kind: Pod for a Pods metric, the described
	// object's for an Object metric.
	Kind schema.GroupKind
	// Names are the objects: the HPA's pods, or the described object.
	Names    []string
	Metric   string
	Selector labels.Selector
}

// RuleAnswer is the rule serving a metric and where the rules were read.
type RuleAnswer struct {
	provider.RuleUse
	// Source is where the adapter's rules were read: "ConfigMap
	// monitoring/prometheus-adapter" or a file.
	Source string `json:"source"`
}

// metricAPI names the API that serves a metric to the HPA controller.
func metricAPI(m autoscalingv2.MetricSpec) string {
	switch m.Type {
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType:
		return "custom.metrics.k8s.io"
	case autoscalingv2.ExternalMetricSourceType:
		return "external.metrics.k8s.io"
	}
	return "metrics.k8s.io"
}

// findRule fills in which adapter rule serves a Pods, Object or External
// metric. Resource metrics come from metrics.k8s.io (metrics-server),
// which no adapter rule serves.
func (e *Explainer) findRule(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, m autoscalingv2.MetricSpec,
	pods []string, podsErr error, out *HPAMetric) {
	if metricAPI(m) == "metrics.k8s.io" {
		return
	}
	if e.o.Rules == nil {
		out.RuleError = "no metrics-adapter rules to look in (--adapter-config)"
		return
	}
	var ans RuleAnswer
	var err error
	switch m.Type {
	case autoscalingv2.PodsMetricSourceType:
		switch {
		case podsErr != nil:
			out.RuleError = fmt.Sprintf("the HPA's pods cannot be listed: %v", podsErr)
			return
		case len(pods) == 0:
			out.RuleError = "the HPA's target selects no pods, so the adapter runs no query"
			return
		}
		sel, serr := metricSelector(m.Pods.Metric.Selector)
		if serr != nil {
			out.RuleError = fmt.Sprintf("metric selector: %v", serr)
			return
		}
		ans, err = e.o.Rules.Custom(ctx, CustomMetric{Namespace: h.Namespace, Kind: schema.GroupKind{Kind: "Pod"}, Names: pods,
			Metric: m.Pods.Metric.Name, Selector: sel})
	case autoscalingv2.ObjectMetricSourceType:
		ref := m.Object.DescribedObject
		gv, gerr := schema.ParseGroupVersion(ref.APIVersion)
		sel, serr := metricSelector(m.Object.Metric.Selector)
		if err := errors.Join(gerr, serr); err != nil {
			out.RuleError = err.Error()
			return
		}
		ans, err = e.o.Rules.Custom(ctx, CustomMetric{Namespace: h.Namespace, Kind: schema.GroupKind{Group: gv.Group, Kind: ref.Kind},
			Names: []string{ref.Name}, Metric: m.Object.Metric.Name, Selector: sel})
	case autoscalingv2.ExternalMetricSourceType:
		sel, serr := metricSelector(m.External.Metric.Selector)
		if serr != nil {
			out.RuleError = fmt.Sprintf("metric selector: %v", serr)
			return
		}
		ans, err = e.o.Rules.External(ctx, h.Namespace, m.External.Metric.Name, sel)
	}
	if err != nil {
		out.RuleError = err.Error()
		return
	}
	out.Rule = &ans
}

// targetPods are the names of the pods the HPA's target selects, sorted,
// as the adapter lists them for a selector request.
func (e *Explainer) targetPods(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) ([]string, error) {
	_, _, selText, err := e.scale(ctx, h.Namespace, h.Spec.ScaleTargetRef)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(selText)
	if err != nil {
		return nil, fmt.Errorf("selector %q: %w", selText, err)
	}
	pl, err := e.o.Client.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	names := make([]string, 0, len(pl.Items))
	for _, p := range pl.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names, nil
}

// metricSelector is the metric selector the adapter sees: none selects
// every series.
func metricSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}
