package explain

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// podMetrics serves a Pods metric for some pods; asked for one pod it has
// no sample for, it answers as the metrics adapter does for an unusable value.
type podMetrics struct {
	served map[string]hpa.PodMetric
	asked  []string
}

func (f *podMetrics) Resource(context.Context, string, labels.Selector, v1.ResourceName, string) (map[string]hpa.PodMetric, error) {
	return nil, errors.New("no resource metrics")
}
func (f *podMetrics) Pods(context.Context, string, labels.Selector, string, labels.Selector) (map[string]hpa.PodMetric, error) {
	return f.served, nil
}
func (f *podMetrics) Object(_ context.Context, _ string, ref autoscalingv2.CrossVersionObjectReference, metric string, _ labels.Selector) (int64, error) {
	f.asked = append(f.asked, ref.Kind+"/"+ref.Name)
	if m, ok := f.served[ref.Name]; ok {
		return m.Value, nil
	}
	return 0, fmt.Errorf("unable to fetch metrics from custom metrics API: Internal error occurred: rules[0]: metric %s: no usable value for %s: value is NaN", metric, ref.Name)
}
func (f *podMetrics) External(context.Context, string, string, labels.Selector) (int64, error) {
	return 0, errors.New("no external metrics")
}

func TestHPAShowsWhyAPodHasNoSample(t *testing.T) {
	target := resource.MustParse("30")
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "gpu", APIVersion: "apps/v1"},
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "gpu_utilization"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &target}}}}}}
	var objs []runtime.Object
	objs = append(objs, h)
	start := metav1.NewTime(now.Add(-time.Hour))
	for _, name := range []string{"gpu-a", "gpu-b"} {
		p := builder.Pod(name).Namespace("default").Label("app", "gpu").CPU("1").OnNode("n1").Build()
		p.Status.Phase = v1.PodRunning
		p.Status.StartTime = &start
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start}}
		objs = append(objs, p)
	}
	c := fake.NewClientset(objs...)
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
			Spec: autoscalingv1.ScaleSpec{Replicas: 2}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=gpu"}}, nil
	})
	m := &podMetrics{served: map[string]hpa.PodMetric{"gpu-a": {Value: 50000, Timestamp: now, Window: time.Minute}}}
	r, err := explainerWith(t, c, m).HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "metric pods gpu_utilization: pod gpu-b has no sample: unable to fetch metrics from custom metrics API: "+
		"Internal error occurred: rules[0]: metric gpu_utilization: no usable value for gpu-b: value is NaN")
	if u := r.HPA.Unserved; len(u) != 1 || u[0].Metric != "gpu_utilization" || len(u[0].Pods) != 1 || u[0].Pods[0].Pod != "gpu-b" {
		t.Errorf("structured answer %+v, want gpu-b without a sample for gpu_utilization", u)
	}
	if len(m.asked) != 1 || m.asked[0] != "Pod/gpu-b" {
		t.Errorf("asked about %v, want only the pod left out of the list (Pod/gpu-b)", m.asked)
	}
}
