package explain

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	custommetrics "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// MetricsSource reads what the HPA controller reads, one metric source
// type per method, values in milli-units.
type MetricsSource interface {
	// Resource reads metrics.k8s.io: each selected pod's usage of res,
	// summed over containers or of one container.
	Resource(ctx context.Context, namespace string, pods labels.Selector, res v1.ResourceName, container string) (map[string]hpa.PodMetric, error)
	// Pods reads custom.metrics.k8s.io for the selected pods.
	Pods(ctx context.Context, namespace string, pods labels.Selector, metric string, metricSelector labels.Selector) (map[string]hpa.PodMetric, error)
	// Object reads custom.metrics.k8s.io for one object.
	Object(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, metric string, metricSelector labels.Selector) (int64, error)
	// External reads external.metrics.k8s.io and sums the series.
	External(ctx context.Context, namespace, metric string, metricSelector labels.Selector) (int64, error)
}

// APIMetrics reads the three metrics APIs through the API server.
type APIMetrics struct {
	resource metricsclient.Interface
	custom   customclient.CustomMetricsClient
	external externalclient.ExternalMetricsClient
}

// NewAPIMetrics builds clients for the metrics APIs from cfg.
func NewAPIMetrics(cfg *rest.Config) (*APIMetrics, error) {
	rc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics.k8s.io client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	ec, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("external.metrics.k8s.io client: %w", err)
	}
	return &APIMetrics{resource: rc, custom: customclient.NewForConfig(cfg, mapper, customclient.NewAvailableAPIsGetter(cached)), external: ec}, nil
}

// Resource implements MetricsSource. Like the controller, a pod whose
// containers lack the resource gets no sample.
func (a *APIMetrics) Resource(ctx context.Context, namespace string, pods labels.Selector, res v1.ResourceName, container string) (map[string]hpa.PodMetric, error) {
	l, err := a.resource.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: pods.String()})
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from resource metrics API: %v", err)
	}
	if len(l.Items) == 0 {
		return nil, fmt.Errorf("no metrics returned from resource metrics API")
	}
	out := make(map[string]hpa.PodMetric, len(l.Items))
	for _, m := range l.Items {
		var sum int64
		found := false
		for _, c := range m.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Usage[res]
			if !ok {
				found = false
				break
			}
			sum += q.MilliValue()
			found = true
		}
		if found {
			out[m.Name] = hpa.PodMetric{Value: sum, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
		}
	}
	return out, nil
}

// Pods implements MetricsSource.
func (a *APIMetrics) Pods(_ context.Context, namespace string, pods labels.Selector, metric string, metricSelector labels.Selector) (map[string]hpa.PodMetric, error) {
	l, err := a.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, pods, metric, metricSelector)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from custom metrics API: %v", err)
	}
	if len(l.Items) == 0 {
		return nil, fmt.Errorf("no metrics returned from custom metrics API")
	}
	out := make(map[string]hpa.PodMetric, len(l.Items))
	for _, m := range l.Items {
		window := time.Minute
		if m.WindowSeconds != nil {
			window = time.Duration(*m.WindowSeconds) * time.Second
		}
		out[m.DescribedObject.Name] = hpa.PodMetric{Value: m.Value.MilliValue(), Timestamp: m.Timestamp.Time, Window: window}
	}
	return out, nil
}

// Object implements MetricsSource.
func (a *APIMetrics) Object(_ context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, metric string, metricSelector labels.Selector) (int64, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return 0, fmt.Errorf("describedObject.apiVersion %q: %w", ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	var v *custommetrics.MetricValue
	if gk.Kind == "Namespace" && gk.Group == "" {
		v, err = a.custom.RootScopedMetrics().GetForObject(gk, namespace, metric, metricSelector)
	} else {
		v, err = a.custom.NamespacedMetrics(namespace).GetForObject(gk, ref.Name, metric, metricSelector)
	}
	if err != nil {
		return 0, fmt.Errorf("unable to fetch metrics from custom metrics API: %v", err)
	}
	return v.Value.MilliValue(), nil
}

// External implements MetricsSource.
func (a *APIMetrics) External(_ context.Context, namespace, metric string, metricSelector labels.Selector) (int64, error) {
	l, err := a.external.NamespacedMetrics(namespace).List(metric, metricSelector)
	if err != nil {
		return 0, fmt.Errorf("unable to fetch metrics from external metrics API: %v", err)
	}
	if len(l.Items) == 0 {
		return 0, fmt.Errorf("no metrics returned from external metrics API")
	}
	var sum int64
	for _, v := range l.Items {
		sum += v.Value.MilliValue()
	}
	return sum, nil
}
