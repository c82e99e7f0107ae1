package explain

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// queueMetrics serves one External metric value (milli-units).
type queueMetrics struct {
	fakeMetrics
	value int64
}

func (q queueMetrics) External(context.Context, string, string, labels.Selector) (int64, error) {
	return q.value, nil
}

// An HPA at minReplicas 0 whose target is at 0: the model reads the
// External metric only when the live HPA holds ScaledToZero=True.
func TestHPAAtZeroReadsScaledToZero(t *testing.T) {
	zero := int32(0)
	target := resource.MustParse("10")
	hpaAtZero := func(conds ...autoscalingv2.HorizontalPodAutoscalerCondition) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "default"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "llm", APIVersion: "apps/v1"},
				MinReplicas:    &zero, MaxReplicas: 8,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "vllm_requests_waiting"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &target}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: conds}}
	}
	client := func(h *autoscalingv2.HorizontalPodAutoscaler) *fake.Clientset {
		c := fake.NewClientset(h)
		c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "scale" {
				return false, nil, nil
			}
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "default"},
				Spec: autoscalingv1.ScaleSpec{Replicas: 0}, Status: autoscalingv1.ScaleStatus{Replicas: 0, Selector: "app=llm"}}, nil
		})
		return c
	}
	byHPA := autoscalingv2.HorizontalPodAutoscalerCondition{Type: "ScaledToZero", Status: v1.ConditionTrue, Reason: "ScaledToZero"}
	tgt := Target{Kind: KindHPA, Namespace: "default", Name: "llm"}

	r, err := explainerWith(t, client(hpaAtZero(byHPA)), queueMetrics{value: 25000}).HPA(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "where the HPA scaled it (ScaledToZero)", "from 0 replicas: ceil(2.500) = 3", "result: scale from 0 to 3")

	r, err = explainerWith(t, client(hpaAtZero()), queueMetrics{value: 25000}).HPA(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "the HPA did not put it there (no ScaledToZero condition)")
}

// A cluster before 1.37 has no ScaledToZero condition: its controller reads
// the metrics of a target at 0 whose minReplicas is 0, and so does the
// replay.
func TestHPAAtZeroOnAnOlderServer(t *testing.T) {
	zero := int32(0)
	target := resource.MustParse("10")
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "llm", APIVersion: "apps/v1"},
			MinReplicas:    &zero, MaxReplicas: 8,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "vllm_requests_waiting"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &target}}}}}}
	c := fake.NewClientset(h)
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "default"},
			Status: autoscalingv1.ScaleStatus{Selector: "app=llm"}}, nil
	})
	c.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "35"}
	r, err := explainerWith(t, c, queueMetrics{value: 25000}).HPA(context.Background(), Target{Kind: KindHPA, Namespace: "default", Name: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "(the controller before 1.37)", "result: scale from 0 to 3")
}
