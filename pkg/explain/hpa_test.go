package explain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

// fakeMetrics serves fixed per-pod CPU usage.
type fakeMetrics struct {
	cpu map[string]hpa.PodMetric
	err error
}

func (f fakeMetrics) Resource(context.Context, string, labels.Selector, v1.ResourceName, string) (map[string]hpa.PodMetric, error) {
	return f.cpu, f.err
}
func (f fakeMetrics) Pods(context.Context, string, labels.Selector, string, labels.Selector) (map[string]hpa.PodMetric, error) {
	return nil, errors.New("no custom metrics")
}
func (f fakeMetrics) Object(context.Context, string, autoscalingv2.CrossVersionObjectReference, string, labels.Selector) (int64, error) {
	return 0, errors.New("no custom metrics")
}
func (f fakeMetrics) External(context.Context, string, string, labels.Selector) (int64, error) {
	return 0, errors.New("no external metrics")
}

func TestHPA(t *testing.T) {
	target := int32(50)
	util := int32(90)
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 2,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: v1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &util}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue,
				Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 2"}}}}
	pod := builder.Pod("web-1").Namespace("default").Label("app", "web").CPU("1").OnNode("n1").Build()
	pod.Status.Phase = v1.PodRunning
	start := metav1.NewTime(now.Add(-time.Hour))
	pod.Status.StartTime = &start
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start}}
	client := func() *fake.Clientset {
		c := fake.NewClientset(h, pod)
		// The fake clientset serves no scale subresource: answer as the API
		// server would for a one-replica Deployment selecting app=web.
		c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "scale" {
				return false, nil, nil
			}
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: autoscalingv1.ScaleSpec{Replicas: 1}, Status: autoscalingv1.ScaleStatus{Replicas: 1, Selector: "app=web"}}, nil
		})
		return c
	}

	r, err := explainerWith(t, client(), fakeMetrics{cpu: map[string]hpa.PodMetric{"web-1": {Value: 900, Timestamp: now}}}).HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "hpa default/web: 1 replica(s), desired 2 (min 1, max 4)",
		"metric resource cpu: current 90% of request, target 50% of request\n    from metrics.k8s.io\n",
		"condition AbleToScale=True (SucceededRescale)",
		"90% of request on average over 1 pod(s) with samples, target 50%: ratio 1.800",
		"ceil(1.800 x 1 ready pod(s)) = 2",
		"result: scale from 1 to 2")

	r, err = explainerWith(t, client(), fakeMetrics{err: errors.New("the server could not find the requested resource")}).HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "cannot be computed: failed to get cpu utilization: unable to get metrics for resource cpu: the server could not find the requested resource",
		"no replica count could be computed")
}

// adapterConfig is the seed's adapter values plus an external rule and a
// second custom rule that would name the same metric from other series:
// the earlier rule must win, as in the adapter.
const adapterConfig = `
prometheus:
  url: http://prometheus.monitoring.svc
  port: 9090
rules:
  custom:
  - seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}'
    resources:
      overrides:
        exported_namespace: {resource: namespace}
        exported_pod: {resource: pod}
    name: {matches: "^(.*)$", as: "gpu_utilization"}
    metricsQuery: 'avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
  - seriesQuery: 'gpu_utilization_other{namespace!="",pod!=""}'
    resources: {template: <<.Resource>>}
    name: {matches: "^(.*)_other$"}
    metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
  external:
  - seriesQuery: 'queue_depth{queue!=""}'
    resources: {overrides: {namespace: {resource: namespace}}}
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

// seriesProm answers series listings as Prometheus would for the rules'
// selectors; it runs no queries.
type seriesProm struct{ listed []string }

func (p *seriesProm) Series(_ context.Context, match string, _, _ time.Time) ([]model.LabelSet, error) {
	p.listed = append(p.listed, match)
	switch {
	case strings.HasPrefix(match, "DCGM_FI_DEV_GPU_UTIL"):
		return []model.LabelSet{{"__name__": "DCGM_FI_DEV_GPU_UTIL", "exported_namespace": "default", "exported_pod": "web-1", "gpu": "0"}}, nil
	case strings.HasPrefix(match, "gpu_utilization_other"):
		return []model.LabelSet{{"__name__": "gpu_utilization_other", "namespace": "default", "pod": "web-1"}}, nil
	case strings.HasPrefix(match, "queue_depth"):
		return []model.LabelSet{{"__name__": "queue_depth", "namespace": "default", "queue": "jobs"}}, nil
	}
	return nil, nil
}

func (p *seriesProm) Query(context.Context, string, time.Time) ([]prom.Sample, error) {
	return nil, errors.New("explain runs no queries")
}

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return m
}

func adapterRules(t *testing.T, p *seriesProm) *AdapterRules {
	t.Helper()
	cfg, err := config.Parse([]byte(adapterConfig))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := metricsadapter.CompileRules(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAdapterRules(AdapterRulesOptions{Rules: rules, Source: "file values.yaml", Prometheus: p, Mapper: testMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// For each metric, the answer names the adapter rule and the PromQL a
// request of the HPA's runs, found by the adapter's own discovery code.
func TestHPAMetricRules(t *testing.T) {
	avg := resource.MustParse("30")
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "gpu_utilization"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "jobs"}}},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "no_such_metric"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}},
			}}}
	web1 := builder.Pod("web-1").Namespace("default").Label("app", "web").Build()
	web0 := builder.Pod("web-0").Namespace("default").Label("app", "web").Build()
	other := builder.Pod("db-0").Namespace("default").Label("app", "db").Build()
	c := fake.NewClientset(h, web1, web0, other)
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 2}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}}, nil
	})
	p := &seriesProm{}
	e := explainerWith(t, c, nil)
	e.o.Rules = adapterRules(t, p)
	r, err := e.HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r,
		"metric pods gpu_utilization: current unknown, target 30 per pod\n    from custom.metrics.k8s.io, adapter rule rules[0] of file values.yaml (seriesQuery DCGM_FI_DEV_GPU_UTIL{exported_namespace!=\"\",exported_pod!=\"\"}, series DCGM_FI_DEV_GPU_UTIL)",
		`PromQL: avg(DCGM_FI_DEV_GPU_UTIL{exported_pod=~"web-0|web-1",exported_namespace="default"}) by (exported_pod)`,
		"metric external queue_depth: current unknown, target 30 per pod\n    from external.metrics.k8s.io, adapter rule externalRules[0]",
		`PromQL: sum(queue_depth{namespace="default",queue="jobs"}) by (queue)`,
		"metric pods no_such_metric: current unknown, target 30 per pod\n    from custom.metrics.k8s.io; the adapter rule cannot be found: ",
		"could not find the metric no_such_metric for pods (rules read from file values.yaml)")
	m := r.HPA.Metrics
	if len(m) != 3 || m[0].Rule == nil || m[0].Rule.Rule != "rules[0]" || m[0].Rule.ObjectLabel != "exported_pod" ||
		m[1].Rule == nil || m[1].Rule.Rule != "externalRules[0]" || m[2].Rule != nil || m[2].RuleError == "" {
		t.Errorf("metrics %+v", m)
	}
}

// Without rules to look in, the answer says so for custom and external
// metrics, and resource metrics need none.
func TestHPAMetricRuleUnknown(t *testing.T) {
	avg := resource.MustParse("30")
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}, MaxReplicas: 2,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "gpu_utilization"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}}}}}
	r, err := explainer(t, nil, h).HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "the adapter rule cannot be found: no metrics-adapter rules to look in (--adapter-config)",
		"model: cannot read the target")
}
