package hpa

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// queueSpec is an HPA at minReplicas 0 on an External queue-length metric
// (Value 10: one replica per 10 waiting requests), with a short scale-down
// window.
func queueSpec(window int32) autoscalingv2.HorizontalPodAutoscalerSpec {
	s := spec(0, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10"))
	s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window}}
	return s
}

func queue(v int64) []Reading { return []Reading{{Value: v * 1000}} }

// A full cycle: down to 0 once the window has passed, ScaledToZero True,
// then up from 0 when the queue fills, ScaledToZero False.
func TestScaleToZeroAndBack(t *testing.T) {
	m := newModel(t, queueSpec(60))
	d := step(t, m, Input{Now: t0, Replicas: 2, Pods: pods(2), Metrics: queue(0)})
	if d.Rescale {
		t.Fatalf("scaled inside the window: %+v", d.Explanation)
	}
	d = step(t, m, Input{Now: t0.Add(61 * time.Second), Replicas: 2, Pods: pods(2), Metrics: queue(0)})
	if !d.Rescale || d.DesiredReplicas != 0 || d.Reason != "All metrics below target" {
		t.Fatalf("got %d rescale=%v reason=%q, want 0; %q", d.DesiredReplicas, d.Rescale, d.Reason, d.Explanation)
	}
	wantCondition(t, d, ScaledToZero, v1.ConditionTrue, "ScaledToZero")
	if !m.ScaledToZeroNow() {
		t.Fatal("model does not hold ScaledToZero after scaling to 0")
	}

	d = step(t, m, Input{Now: t0.Add(90 * time.Second), Replicas: 0, StatusReplicas: 0, Metrics: queue(0)})
	if d.Rescale || d.DesiredReplicas != 0 {
		t.Fatalf("empty queue at 0: got %d rescale=%v", d.DesiredReplicas, d.Rescale)
	}
	wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionTrue, "ValidMetricFound")

	d = step(t, m, Input{Now: t0.Add(120 * time.Second), Replicas: 0, StatusReplicas: 0, Metrics: queue(25)})
	if !d.Rescale || d.DesiredReplicas != 3 {
		t.Fatalf("25 waiting at 0: got %d rescale=%v, want 3 (ceil(25/10)); %q", d.DesiredReplicas, d.Rescale, d.Explanation)
	}
	if !strings.Contains(d.Reason, "external metric queue") || !strings.HasSuffix(d.Reason, "above target") {
		t.Fatalf("reason %q", d.Reason)
	}
	wantCondition(t, d, ScaledToZero, v1.ConditionFalse, "NotScaledToZero")
	if m.ScaledToZeroNow() {
		t.Fatal("model still holds ScaledToZero after scaling up")
	}
}

// Any value above 0 activates a target at 0: there is no tolerance and no
// activation threshold from zero, only the scale-up cap.
func TestScaleFromZeroProposal(t *testing.T) {
	yes := true
	cases := []struct {
		name   string
		spec   autoscalingv2.HorizontalPodAutoscalerSpec
		value  int64 // milli
		want   int32
		reason string // ScalingLimited reason
	}{
		{"one waiting request gives one replica", queueSpec(0), 1000, 1, "DesiredWithinRange"},
		{"a fraction still gives one", queueSpec(0), 1, 1, "DesiredWithinRange"},
		{"capped by the default scale-up policies (4 pods per 15s)", queueSpec(0), 200000, 4, "ScaleUpLimit"},
		{"without behavior: max(2 x 0, 4)", spec(0, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10")), 200000, 4, "ScaleUpLimit"},
		{"per-pod target divides the total", spec(0, 8, externalMetric("queue", autoscalingv2.AverageValueMetricType, "10")), 25000, 3, "DesiredWithinRange"},
		{"object metric works too", spec(0, 8, objectMetric("queue", autoscalingv2.ValueMetricType, "10")), 15000, 2, "DesiredWithinRange"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, tc.spec)
			d := step(t, m, Input{Replicas: 0, StatusReplicas: 0, Metrics: []Reading{{Value: tc.value}}, ScaledToZero: &yes})
			if d.DesiredReplicas != tc.want {
				t.Fatalf("got %d, want %d; %q %q", d.DesiredReplicas, tc.want, d.Explanation, d.Metrics[0].Notes)
			}
			wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionStatus(map[bool]string{true: "True", false: "False"}[tc.reason != "DesiredWithinRange"]), tc.reason)
		})
	}
}

// A target at 0 that the HPA did not put there, or with the gate off, is
// left alone whatever the metrics say; a raised minReplicas lifts a target
// the HPA put at 0.
func TestZeroReplicasLeftAlone(t *testing.T) {
	yes, no := true, false
	off := DefaultOptions()
	off.ScaleToZero = false
	cases := []struct {
		name    string
		spec    autoscalingv2.HorizontalPodAutoscalerSpec
		opts    Options
		zeroed  *bool
		metrics []Reading
		want    int32
		active  string // ScalingActive reason
	}{
		{"scaled to 0 by hand", queueSpec(0), DefaultOptions(), &no, queue(50), 0, "ScalingDisabled"},
		{"new HPA on a target at 0", queueSpec(0), DefaultOptions(), nil, queue(50), 0, "ScalingDisabled"},
		{"gate off", spec(1, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10")), off, &yes, queue(50), 0, "ScalingDisabled"},
		{"minReplicas 1 at 0 by hand", spec(1, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10")), DefaultOptions(), &no, queue(50), 0, "ScalingDisabled"},
		{"minReplicas raised while at 0 by the HPA", spec(2, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10")), DefaultOptions(), &yes, queue(0), 2, "ValidMetricFound"},
		{"minReplicas raised, only per-pod metrics", spec(2, 8, podsMetric("qps", "1")), DefaultOptions(), &yes, []Reading{{Err: errors.New("no pods")}}, 0, "FailedGetPodsMetric"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			d := step(t, m, Input{Replicas: 0, StatusReplicas: 0, Metrics: tc.metrics, ScaledToZero: tc.zeroed})
			if d.DesiredReplicas != tc.want || d.Rescale != (tc.want != 0) {
				t.Fatalf("got %d rescale=%v, want %d; %q", d.DesiredReplicas, d.Rescale, tc.want, d.Explanation)
			}
			c, _ := d.Condition(autoscalingv2.ScalingActive)
			if c.Reason != tc.active {
				t.Fatalf("ScalingActive reason %q, want %q; %q", c.Reason, tc.active, d.Explanation)
			}
		})
	}
}

func TestScaleToZeroValidation(t *testing.T) {
	off := DefaultOptions()
	off.ScaleToZero = false
	if _, err := New(queueSpec(0), off); err == nil || !strings.Contains(err.Error(), "spec.minReplicas: must be at least 1 (the HPAScaleToZero feature gate is off), got 0") {
		t.Fatalf("gate off: error = %v", err)
	}
	mixed := spec(0, 8, cpuUtilization(50), objectMetric("queue", autoscalingv2.ValueMetricType, "10"))
	if _, err := New(mixed, DefaultOptions()); err != nil {
		t.Fatalf("a CPU metric beside an Object metric: %v", err)
	}
	neg := spec(-1, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10"))
	if _, err := New(neg, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "spec.minReplicas: must be at least 0, got -1") {
		t.Fatalf("negative: error = %v", err)
	}
}

// A Pods metric cannot be read at 0 replicas; the External one decides.
func TestFromZeroWithAPerPodMetricBeside(t *testing.T) {
	yes := true
	m := newModel(t, spec(0, 8, podsMetric("qps", "1"), externalMetric("queue", autoscalingv2.ValueMetricType, "10")))
	d := step(t, m, Input{Replicas: 0, StatusReplicas: 0, ScaledToZero: &yes,
		Metrics: []Reading{{Pods: map[string]PodMetric{}}, {Value: 12000}}})
	if d.DesiredReplicas != 2 || d.Metrics[0].Err == nil {
		t.Fatalf("got %d, pods metric err %v; %q", d.DesiredReplicas, d.Metrics[0].Err, d.Explanation)
	}
}

// Before 1.37 (the gate on, no ScaledToZero condition) the controller reads
// the metrics of any target at 0 whose minReplicas is 0, whoever put it
// there, and writes no ScaledToZero condition.
func TestScaleFromZeroBefore137(t *testing.T) {
	o := DefaultOptions()
	o.ScaledToZeroCondition = false
	m, err := New(queueSpec(0), o)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	d := step(t, m, Input{Replicas: 0, StatusReplicas: 0, Metrics: queue(25), ScaledToZero: &no})
	if !d.Rescale || d.DesiredReplicas != 3 {
		t.Fatalf("got %d rescale=%v, want 3; %q", d.DesiredReplicas, d.Rescale, d.Explanation)
	}
	if _, ok := d.Condition(ScaledToZero); ok {
		t.Fatalf("ScaledToZero written before 1.37: %+v", d.Conditions)
	}
	d = step(t, m, Input{Now: t0.Add(time.Minute), Replicas: 3, Pods: pods(3), Metrics: queue(0)})
	if d.DesiredReplicas != 0 || m.ScaledToZeroNow() {
		t.Fatalf("back to 0: got %d, ScaledToZero %v", d.DesiredReplicas, m.ScaledToZeroNow())
	}
	mr := spec(1, 8, externalMetric("queue", autoscalingv2.ValueMetricType, "10"))
	m, err = New(mr, o)
	if err != nil {
		t.Fatal(err)
	}
	if d := step(t, m, Input{Replicas: 0, StatusReplicas: 0, Metrics: queue(25)}); d.Rescale {
		t.Fatalf("minReplicas 1 at 0 scaled: %q", d.Explanation)
	}
}
