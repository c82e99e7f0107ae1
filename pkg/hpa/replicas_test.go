package hpa

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each case is one metric's proposal, taken from the controller's
// documented algorithm: desired = ceil(current * currentValue / target),
// no change within the tolerance, missing and unready pods filled in the
// direction that dampens the change.
func TestMetricProposal(t *testing.T) {
	startingPod := func() *v1.Pod {
		p := pod("p2").build()
		start := metav1.NewTime(t0.Add(-time.Minute))
		p.Status.StartTime = &start
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-30 * time.Second))
		return p
	}
	noCPURequest := pod("p1").build()
	delete(noCPURequest.Spec.Containers[0].Resources.Requests, v1.ResourceCPU)
	cases := []struct {
		name     string
		metric   autoscalingv2.MetricSpec
		replicas int32
		status   int32
		pods     []*v1.Pod
		reading  Reading
		want     int32
		wantErr  string
	}{
		{name: "pods metric at twice the target doubles one replica", metric: podsMetric("qps", "100m"),
			replicas: 1, pods: pods(1), reading: Reading{Pods: samples(200)}, want: 2},
		{name: "pods metric at half the target halves two replicas", metric: podsMetric("qps", "100m"),
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(50, 50)}, want: 1},
		{name: "ratio 1.1 is within the default tolerance", metric: cpuUtilization(50),
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(550, 550)}, want: 2},
		{name: "ratio 1.12 is outside the tolerance", metric: cpuUtilization(50),
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(560, 560)}, want: 3},
		{name: "ratio 0.9 is within the default tolerance", metric: cpuUtilization(50),
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(450, 450)}, want: 2},
		{name: "utilization is truncated to a whole percent before the ratio", metric: cpuUtilization(50),
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(559, 560)}, want: 2},
		{name: "utilization weighs pods by their requests", metric: cpuUtilization(50), replicas: 2,
			pods:    []*v1.Pod{pod("p0").cpu("1").build(), pod("p1").cpu("3").build()},
			reading: Reading{Pods: samples(1000, 1000)}, want: 2},
		{name: "a sidecar's request counts toward utilization", metric: cpuUtilization(50), replicas: 2,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").sidecar("1").build()},
			reading: Reading{Pods: samples(1000, 1000)}, want: 3},
		{name: "missing pod counts 0 on a scale-up and can cancel it", metric: cpuUtilization(50),
			replicas: 4, pods: pods(4), reading: Reading{Pods: samples(800, 800)}, want: 4},
		{name: "missing pod counts 0 on a scale-up", metric: cpuUtilization(50),
			replicas: 3, pods: pods(3), reading: Reading{Pods: samples(1000, 1000)}, want: 4},
		{name: "missing pod counts 100% of request on a scale-down", metric: cpuUtilization(80),
			replicas: 3, pods: pods(3), reading: Reading{Pods: samples(100, 100)}, want: 2},
		{name: "missing pod counts the target on a scale-down when it is above 100%", metric: cpuUtilization(200),
			replicas: 3, pods: pods(3), reading: Reading{Pods: samples(100, 100)}, want: 2},
		{name: "never-ready CPU pods count 0 on a scale-up", metric: cpuUtilization(50), replicas: 4,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").neverReady().build(), pod("p3").neverReady().build()},
			reading: Reading{Pods: samples(1000, 1000, 1000, 1000)}, want: 4},
		{name: "never-ready CPU pods are left out of a scale-down", metric: cpuUtilization(50), replicas: 3,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").neverReady().build()},
			reading: Reading{Pods: samples(100, 100, 1000)}, want: 1},
		{name: "GPU samples of unready pods count: readiness is judged for CPU only", metric: gpuUtilization(50), replicas: 3,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").neverReady().build()},
			reading: Reading{Pods: samples(1000, 1000, 1000)}, want: 6},
		{name: "pending pods count 0 on a scale-up of a pods metric", metric: podsMetric("gpu_util", "50"), replicas: 4,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").pending().build(), pod("p3").pending().build()},
			reading: Reading{Pods: samples(100000, 100000)}, want: 4},
		{name: "failed pods are ignored, not missing", metric: cpuUtilization(50), replicas: 3,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").failed().build()},
			reading: Reading{Pods: samples(1000, 1000)}, want: 4},
		{name: "CPU sample not a full window after the pod became ready counts 0 on a scale-up", metric: cpuUtilization(50), replicas: 3,
			pods:    []*v1.Pod{pod("p0").build(), pod("p1").build(), startingPod()},
			reading: Reading{Pods: samples(1000, 1000, 1000)}, want: 4},
		{name: "resource average value", metric: autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("500m"))}}},
			replicas: 2, pods: pods(2), reading: Reading{Pods: samples(1000, 1000)}, want: 4},
		{name: "object value scales the ready pods", metric: objectMetric("requests", autoscalingv2.ValueMetricType, "300"),
			replicas: 3, pods: pods(3), reading: Reading{Value: 600000}, want: 6},
		{name: "object value counts only running ready pods", metric: objectMetric("requests", autoscalingv2.ValueMetricType, "300"),
			replicas: 3, pods: []*v1.Pod{pod("p0").build(), pod("p1").build(), pod("p2").neverReady().build()},
			reading: Reading{Value: 600000}, want: 4},
		{name: "object average value divides by the status replicas", metric: objectMetric("requests", autoscalingv2.AverageValueMetricType, "100"),
			replicas: 3, status: 3, pods: pods(3), reading: Reading{Value: 450000}, want: 5},
		{name: "external value below target", metric: externalMetric("queue", autoscalingv2.ValueMetricType, "100"),
			replicas: 4, pods: pods(4), reading: Reading{Value: 50000}, want: 2},
		{name: "external average value within tolerance keeps the status replicas", metric: externalMetric("queue", autoscalingv2.AverageValueMetricType, "100"),
			replicas: 3, status: 3, pods: pods(3), reading: Reading{Value: 310000}, want: 3},
		{name: "no selected pods", metric: cpuUtilization(50), replicas: 2, reading: Reading{Pods: samples(100)},
			wantErr: "no pods returned by selector"},
		{name: "a pod without a request", metric: cpuUtilization(50), replicas: 2,
			pods: []*v1.Pod{pod("p0").build(), noCPURequest}, reading: Reading{Pods: samples(100, 100)},
			wantErr: "missing request for cpu in container main of Pod p1"},
		{name: "every CPU pod unready", metric: cpuUtilization(50), replicas: 2,
			pods:    []*v1.Pod{pod("p0").neverReady().build(), pod("p1").neverReady().build()},
			reading: Reading{Pods: samples(100, 100)}, wantErr: "did not receive metrics for targeted pods"},
		{name: "a read error", metric: podsMetric("qps", "1"), replicas: 2, pods: pods(2),
			reading: Reading{Err: errors.New("the server could not find the metric")}, wantErr: "unable to get metric qps: the server could not find the metric"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, spec(1, 100, tc.metric))
			d := step(t, m, Input{Replicas: tc.replicas, StatusReplicas: tc.status, Pods: tc.pods, Metrics: []Reading{tc.reading}})
			mr := d.Metrics[0]
			if tc.wantErr != "" {
				if mr.Err == nil || !strings.Contains(mr.Err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", mr.Err, tc.wantErr)
				}
				wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionFalse, failReasonFor(tc.metric.Type))
				return
			}
			if mr.Err != nil {
				t.Fatalf("unexpected error: %v", mr.Err)
			}
			if mr.Proposal != tc.want {
				t.Fatalf("proposal = %d, want %d\nnotes: %q", mr.Proposal, tc.want, mr.Notes)
			}
		})
	}
}

func failReasonFor(t autoscalingv2.MetricSourceType) string {
	return map[autoscalingv2.MetricSourceType]string{
		autoscalingv2.ResourceMetricSourceType: "FailedGetResourceMetric",
		autoscalingv2.PodsMetricSourceType:     "FailedGetPodsMetric",
	}[t]
}

// A per-direction tolerance in spec.behavior replaces the controller's.
func TestConfiguredTolerance(t *testing.T) {
	s := spec(1, 10, cpuUtilization(50))
	tol := resource.MustParse("0.05")
	s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &tol}}
	m := newModel(t, s)
	// 54% against 50%: ratio 1.08, inside 0.1, outside 0.05.
	d := step(t, m, Input{Replicas: 4, Pods: pods(4), Metrics: []Reading{{Pods: samples(540, 540, 540, 540)}}})
	if d.Metrics[0].Proposal != 5 {
		t.Fatalf("proposal = %d, want 5 (ceil(1.08 x 4)); notes %q", d.Metrics[0].Proposal, d.Metrics[0].Notes)
	}
	// The scale-down side keeps the controller's 0.1: ratio 0.92 stays.
	d = step(t, newModel(t, s), Input{Replicas: 4, Pods: pods(4), Metrics: []Reading{{Pods: samples(460, 460, 460, 460)}}})
	if d.Metrics[0].Proposal != 4 {
		t.Fatalf("proposal = %d, want 4 (within the default scale-down tolerance)", d.Metrics[0].Proposal)
	}
}

// The metric status reports what the controller writes to status.currentMetrics.
func TestMetricStatus(t *testing.T) {
	m := newModel(t, spec(1, 10, cpuUtilization(50)))
	d := step(t, m, Input{Replicas: 2, Pods: pods(2), Metrics: []Reading{{Pods: samples(700, 500)}}})
	cur := d.Metrics[0].Current
	if cur.AverageUtilization == nil || *cur.AverageUtilization != 60 {
		t.Fatalf("averageUtilization = %v, want 60", cur.AverageUtilization)
	}
	if cur.AverageValue == nil || cur.AverageValue.MilliValue() != 600 {
		t.Fatalf("averageValue = %v, want 600m", cur.AverageValue)
	}
	if d.Metrics[0].Name != "cpu resource utilization (percentage of request)" {
		t.Fatalf("name = %q", d.Metrics[0].Name)
	}
}

// CurrentMetrics is status.currentMetrics: one entry per spec metric, of
// the metric's type and identity, with the sync's current value.
func TestCurrentMetricsFollowTheSpec(t *testing.T) {
	s := spec(1, 10, cpuUtilization(50))
	m := newModel(t, s)
	d := step(t, m, Input{Replicas: 2, Pods: pods(2), Metrics: []Reading{{Pods: samples(700, 500)}}})
	cm := CurrentMetrics(m.Spec(), d.Metrics)
	if len(cm) != 1 || cm[0].Type != s.Metrics[0].Type || cm[0].Resource == nil || cm[0].Resource.Name != s.Metrics[0].Resource.Name ||
		cm[0].Resource.Current.AverageUtilization == nil || *cm[0].Resource.Current.AverageUtilization != 60 {
		t.Fatalf("current metrics %+v, want the cpu resource at 60%%", cm)
	}
}
