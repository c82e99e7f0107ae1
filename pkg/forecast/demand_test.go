package forecast

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// History keeps what the forecast reads, replaces a reading at the same
// time, and forgets a workload no longer reported.
func TestHistoryKeepsForgetsAndReplaces(t *testing.T) {
	var h History
	a, b := Demand{Namespace: "ns", Name: "a"}, Demand{Namespace: "ns", Name: "b"}
	for i := 0; i < 10; i++ {
		a.Value = float64(i)
		got := h.Record(t0.Add(time.Duration(i)*time.Minute), []Demand{b, a}, 3*time.Minute)
		if got[0].Name != "a" || got[1].Name != "b" {
			t.Fatalf("Record returned %v, want sorted by key", got)
		}
	}
	s := h.Of("ns/a")
	if len(s) != 4 || s[0].Value != 6 || s[3].Value != 9 {
		t.Errorf("history %v, want the readings of the last 3 minutes (6..9)", s)
	}
	a.Value = 42
	h.Record(t0.Add(9*time.Minute), []Demand{a}, 3*time.Minute)
	if s := h.Of("ns/a"); len(s) != 4 || s[3].Value != 42 {
		t.Errorf("history %v, want the second reading at 9m to replace the first", s)
	}
	if len(h.Of("ns/b")) != 0 {
		t.Errorf("b not reported: history %v, want it forgotten", h.Of("ns/b"))
	}
}

func hpaWith(m autoscalingv2.MetricSpec, cur *autoscalingv2.MetricStatus, current, desired int32) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{m},
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "llm"}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current, DesiredReplicas: desired}}
	if cur != nil {
		h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{*cur}
	}
	return h
}

func TestDemandOfReadsTheHPAStatus(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	id := autoscalingv2.MetricIdentifier{Name: "queue_depth"}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: id,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("2")}}}
	podsNow := &autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: id,
		Current: autoscalingv2.MetricValueStatus{AverageValue: q("3")}}}
	ext := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("8")}}}
	extNow := &autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{Metric: id,
		Current: autoscalingv2.MetricValueStatus{AverageValue: q("20")}}}
	util := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}
	for _, c := range []struct {
		name       string
		h          *autoscalingv2.HorizontalPodAutoscaler
		ok         bool
		value, per float64
		running    int32
	}{
		{"pods metric: average times replicas", hpaWith(pods, podsNow, 4, 5), true, 12, 2, 5},
		{"external at zero replicas: the average is the whole", hpaWith(ext, extNow, 0, 1), true, 20, 8, 1},
		{"no reading yet", hpaWith(pods, nil, 1, 1), false, 0, 0, 0},
		{"utilization target: not a demand", hpaWith(util, nil, 1, 1), false, 0, 0, 0},
	} {
		d, ok := DemandOf(c.h, v1.PodTemplateSpec{})
		if ok != c.ok || d.Value != c.value || d.PerReplica != c.per || d.Running != c.running {
			t.Errorf("%s: %+v %v, want value %v per replica %v running %d (%v)", c.name, d, ok, c.value, c.per, c.running, c.ok)
		}
		if ok && (d.Key() != "serving/llm" || d.MaxReplicas != 10) {
			t.Errorf("%s: %s max %d, want the Deployment serving/llm and the HPA's max", c.name, d.Key(), d.MaxReplicas)
		}
	}
}
