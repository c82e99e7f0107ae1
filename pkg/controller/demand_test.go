package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// With forecast buffers on, the loop reads an inference Deployment's HPA
// status (12 requests in flight, 4 a replica, 1 replica asked for) and
// holds warm room for the 2 replicas the demand calls for beyond it: the
// cheaper GPU group grows by 2 with no pod pending, and the status says
// why. Off, the HPA is not read and nothing grows.
func TestForecastBufferFromTheHPAStatus(t *testing.T) {
	for _, on := range []bool{true, false} {
		cp := twoGroups(4, gpuTemplate)
		o := quietOptions()
		o.Autoscaler.Forecast.Enabled = on
		c, err := New(fake.NewClientset(), cp, o)
		if err != nil {
			t.Fatal(err)
		}
		if on {
			pod := builder.Pod("x").CPU("2").GPU(1).Build()
			dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm"},
				Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: pod.Spec}}}
			per, avg := resource.MustParse("4"), resource.MustParse("12")
			metric := autoscalingv2.MetricIdentifier{Name: "requests_in_flight"}
			h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 8,
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "llm"},
					Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
						Metric: metric, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &per}}}}},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 1,
					CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
						Metric: metric, Current: autoscalingv2.MetricValueStatus{AverageValue: &avg}}}}}}
			if err := c.factory.Apps().V1().Deployments().Informer().GetIndexer().Add(dep); err != nil {
				t.Fatal(err)
			}
			if err := c.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Add(h); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var want []string
		if on {
			want = []string{"increase a-cheap 2"}
		}
		if !slices.Equal(cp.calls, want) {
			t.Fatalf("forecast buffers %v: calls %v, want %v", on, cp.calls, want)
		}
		if !on {
			continue
		}
		doc := c.lastStatus
		if doc == nil || len(doc.Forecasts) != 1 || doc.Forecasts[0].Replicas != 2 || !strings.Contains(doc.Forecasts[0].Message, "buffer 2") {
			t.Errorf("status forecasts %+v, want serving/llm holding 2 warm replicas with the reason", doc)
		}
	}
}
