package hpa

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// Several metrics: the largest proposal wins, and the reason names it.
func TestSeveralMetricsTakeTheLargest(t *testing.T) {
	m := newModel(t, spec(1, 10, cpuUtilization(50), podsMetric("gpu_util", "50")))
	d := step(t, m, Input{Replicas: 2, Pods: pods(2), Metrics: []Reading{
		{Pods: samples(600, 600)},     // 60% of 50%: ceil(1.2 x 2) = 3
		{Pods: samples(80000, 80000)}, // 80 of 50: ceil(1.6 x 2) = 4
	}})
	if d.DesiredReplicas != 4 || !d.Rescale {
		t.Fatalf("desired = %d (rescale %v), want 4; explanation %q", d.DesiredReplicas, d.Rescale, d.Explanation)
	}
	if d.Reason != "pods metric gpu_util above target" {
		t.Fatalf("reason = %q", d.Reason)
	}
	wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionTrue, "ValidMetricFound")
	wantCondition(t, d, autoscalingv2.AbleToScale, v1.ConditionTrue, "SucceededRescale")
	wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionFalse, "DesiredWithinRange")
}

// A failed metric does not stop a scale-up the others ask for, but it does
// stop a scale-down.
func TestPartialMetricFailure(t *testing.T) {
	fail := Reading{Err: errors.New("no adapter")}
	m := newModel(t, spec(1, 10, cpuUtilization(50), podsMetric("gpu_util", "50")))
	d := step(t, m, Input{Replicas: 2, Pods: pods(2), Metrics: []Reading{{Pods: samples(1000, 1000)}, fail}})
	if d.DesiredReplicas != 4 {
		t.Fatalf("scale-up with one failed metric: desired = %d, want 4; %q", d.DesiredReplicas, d.Explanation)
	}
	wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionTrue, "ValidMetricFound")

	m = newModel(t, spec(1, 10, cpuUtilization(50), podsMetric("gpu_util", "50")))
	d = step(t, m, Input{Replicas: 4, Pods: pods(4), Metrics: []Reading{{Pods: samples(100, 100, 100, 100)}, fail}})
	if d.DesiredReplicas != 4 || d.Rescale {
		t.Fatalf("scale-down with one failed metric: desired = %d (rescale %v), want 4 unchanged", d.DesiredReplicas, d.Rescale)
	}
	wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionFalse, "FailedGetPodsMetric")
	c, _ := d.Condition(autoscalingv2.ScalingActive)
	if !strings.HasPrefix(c.Message, "the HPA was unable to compute the replica count: unable to get metric gpu_util: no adapter") {
		t.Fatalf("message = %q", c.Message)
	}
}

// Outside [min, max] the controller moves to the bound without metrics; a
// target at zero is left alone.
func TestBoundsAndZero(t *testing.T) {
	noData := []Reading{{Err: errors.New("unused")}}
	cases := []struct {
		name      string
		replicas  int32
		want      int32
		rescale   bool
		reason    string
		condition string
	}{
		{"above max goes to max", 12, 10, true, "Current number of replicas above Spec.MaxReplicas", ""},
		{"below min goes to min", 1, 2, true, "Current number of replicas below Spec.MinReplicas", ""},
		{"zero replicas disables scaling", 0, 0, false, "", "ScalingDisabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, spec(2, 10, cpuUtilization(50)))
			d := step(t, m, Input{Replicas: tc.replicas, Pods: pods(int(tc.replicas)), Metrics: noData})
			if d.DesiredReplicas != tc.want || d.Rescale != tc.rescale || d.Reason != tc.reason {
				t.Fatalf("got %d rescale=%v reason=%q, want %d %v %q", d.DesiredReplicas, d.Rescale, d.Reason, tc.want, tc.rescale, tc.reason)
			}
			if tc.condition != "" {
				wantCondition(t, d, autoscalingv2.ScalingActive, v1.ConditionFalse, tc.condition)
			}
		})
	}
}

// Without spec.behavior: scale-down waits for the highest recommendation of
// the last 5 minutes (the first sync counts the current size), and a
// scale-up is capped at max(2 x current, 4).
func TestDefaultStabilizationAndScaleUpCap(t *testing.T) {
	m := newModel(t, spec(1, 20, cpuUtilization(50)))
	low := func(n int) []Reading { return []Reading{{Pods: samples(make([]int64, n)...)}} }
	d := step(t, m, Input{Now: t0, Replicas: 4, Pods: pods(4), Metrics: low(4)})
	if d.DesiredReplicas != 4 {
		t.Fatalf("first sync of an idle HPA: desired = %d, want 4 (the current size is a recent recommendation)", d.DesiredReplicas)
	}
	wantCondition(t, d, autoscalingv2.AbleToScale, v1.ConditionTrue, "ScaleDownStabilized")
	d = step(t, m, Input{Now: t0.Add(4 * time.Minute), Replicas: 4, Pods: pods(4), Metrics: low(4)})
	if d.DesiredReplicas != 4 {
		t.Fatalf("4 minutes in: desired = %d, want 4", d.DesiredReplicas)
	}
	d = step(t, m, Input{Now: t0.Add(5*time.Minute + time.Second), Replicas: 4, Pods: pods(4), Metrics: low(4)})
	if d.DesiredReplicas != 1 {
		t.Fatalf("past the window: desired = %d, want 1; %q", d.DesiredReplicas, d.Explanation)
	}

	m = newModel(t, spec(1, 20, cpuUtilization(50)))
	d = step(t, m, Input{Replicas: 1, Pods: pods(1), Metrics: []Reading{{Pods: samples(10000)}}}) // 1000% of request
	if d.DesiredReplicas != 4 {
		t.Fatalf("scale-up cap from 1: desired = %d, want 4", d.DesiredReplicas)
	}
	wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionTrue, "ScaleUpLimit")
	m = newModel(t, spec(1, 5, cpuUtilization(50)))
	d = step(t, m, Input{Replicas: 3, Pods: pods(3), Metrics: []Reading{{Pods: samples(10000, 10000, 10000)}}})
	if d.DesiredReplicas != 5 {
		t.Fatalf("max below the cap: desired = %d, want 5", d.DesiredReplicas)
	}
	wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionTrue, "TooManyReplicas")
}

// Behavior policies, as the HPA documentation describes them.
func TestBehaviorPolicies(t *testing.T) {
	pods1 := autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}
	hot := func(n int) []Reading { // every pod at 1000% of request
		v := make([]int64, n)
		for i := range v {
			v[i] = 10000
		}
		return []Reading{{Pods: samples(v...)}}
	}
	t.Run("one pod per minute", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{pods1}}}
		m := newModel(t, s)
		d := step(t, m, Input{Now: t0, Replicas: 2, Pods: pods(2), Metrics: hot(2)})
		if d.DesiredReplicas != 3 {
			t.Fatalf("desired = %d, want 3", d.DesiredReplicas)
		}
		wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionTrue, "ScaleUpLimit")
		d = step(t, m, Input{Now: t0.Add(30 * time.Second), Replicas: 3, Pods: pods(3), Metrics: hot(3)})
		if d.DesiredReplicas != 3 || d.Rescale {
			t.Fatalf("30s later: desired = %d, want 3 (the minute's pod is used)", d.DesiredReplicas)
		}
		d = step(t, m, Input{Now: t0.Add(61 * time.Second), Replicas: 3, Pods: pods(3), Metrics: hot(3)})
		if d.DesiredReplicas != 4 {
			t.Fatalf("61s later: desired = %d, want 4", d.DesiredReplicas)
		}
	})
	selectCase := func(sel autoscalingv2.ScalingPolicySelect, want int32) {
		t.Run("selectPolicy "+string(sel), func(t *testing.T) {
			s := spec(1, 100, cpuUtilization(50))
			s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: policyp(sel)}}
			d := step(t, newModel(t, s), Input{Replicas: 10, Pods: pods(10), Metrics: hot(10)})
			if d.DesiredReplicas != want {
				t.Fatalf("desired = %d, want %d; %q", d.DesiredReplicas, want, d.Explanation)
			}
		})
	}
	selectCase(autoscalingv2.MaxChangePolicySelect, 20) // default policies: 4 pods or 100%: the larger
	selectCase(autoscalingv2.MinChangePolicySelect, 14) // the smaller
	selectCase(autoscalingv2.DisabledPolicySelect, 10)
	t.Run("percent scale-down rounds down", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: int32p(0),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}}
		m := newModel(t, s)
		d := step(t, m, Input{Now: t0, Replicas: 9, Pods: pods(9), Metrics: []Reading{{Pods: samples(make([]int64, 9)...)}}})
		if d.DesiredReplicas != 4 {
			t.Fatalf("desired = %d, want 4 (int(9 x 0.5))", d.DesiredReplicas)
		}
		wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionTrue, "ScaleDownLimit")
		// 30s later the period started at 9: 4 is as low as it goes.
		d = step(t, m, Input{Now: t0.Add(30 * time.Second), Replicas: 4, Pods: pods(4), Metrics: []Reading{{Pods: samples(0, 0, 0, 0)}}})
		if d.DesiredReplicas != 4 {
			t.Fatalf("30s later: desired = %d, want 4", d.DesiredReplicas)
		}
	})
	t.Run("a scale-down in the period raises the period's starting size", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{pods1}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: int32p(0)}}
		m := newModel(t, s)
		if d := step(t, m, Input{Now: t0, Replicas: 4, Pods: pods(4), Metrics: []Reading{{Pods: samples(0, 0, 0, 0)}}}); d.DesiredReplicas != 1 {
			t.Fatalf("idle: desired = %d, want 1", d.DesiredReplicas)
		}
		// The minute's period started at 4 (1 now, 3 removed in it): one pod
		// per minute allows 5.
		d := step(t, m, Input{Now: t0.Add(10 * time.Second), Replicas: 1, Pods: pods(1), Metrics: hot(1)})
		if d.DesiredReplicas != 5 {
			t.Fatalf("hot again: desired = %d, want 5; %q", d.DesiredReplicas, d.Explanation)
		}
	})
	t.Run("scale-down disabled", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: int32p(0), SelectPolicy: policyp(autoscalingv2.DisabledPolicySelect)}}
		d := step(t, newModel(t, s), Input{Replicas: 5, Pods: pods(5), Metrics: []Reading{{Pods: samples(0, 0, 0, 0, 0)}}})
		if d.DesiredReplicas != 5 || d.Rescale {
			t.Fatalf("desired = %d, want 5", d.DesiredReplicas)
		}
		wantCondition(t, d, autoscalingv2.ScalingLimited, v1.ConditionTrue, "ScaleDownLimit")
	})
}

// Stabilization windows per direction.
func TestBehaviorStabilization(t *testing.T) {
	t.Run("scale-up window holds the lowest recent recommendation", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: int32p(60)}}
		m := newModel(t, s)
		d := step(t, m, Input{Now: t0, Replicas: 2, Pods: pods(2), Metrics: []Reading{{Pods: samples(2000, 2000)}}})
		if d.DesiredReplicas != 2 {
			t.Fatalf("desired = %d, want 2 (the first sync's size is in the window)", d.DesiredReplicas)
		}
		wantCondition(t, d, autoscalingv2.AbleToScale, v1.ConditionTrue, "ScaleUpStabilized")
		d = step(t, m, Input{Now: t0.Add(61 * time.Second), Replicas: 2, Pods: pods(2), Metrics: []Reading{{Pods: samples(2000, 2000)}}})
		// 8 proposed; the default policies allow max(2+4, 2x2) = 6.
		if d.DesiredReplicas != 6 {
			t.Fatalf("after the window: desired = %d, want 6; %q", d.DesiredReplicas, d.Explanation)
		}
	})
	t.Run("scale-down window defaults to the controller flag", func(t *testing.T) {
		s := spec(1, 20, cpuUtilization(50))
		s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		o := DefaultOptions()
		o.DownscaleStabilization = time.Minute
		m, err := New(s, o)
		if err != nil {
			t.Fatal(err)
		}
		idle := []Reading{{Pods: samples(0, 0, 0, 0)}}
		if d := step(t, m, Input{Now: t0, Replicas: 4, Pods: pods(4), Metrics: idle}); d.DesiredReplicas != 4 {
			t.Fatalf("inside the window: desired = %d, want 4", d.DesiredReplicas)
		}
		if d := step(t, m, Input{Now: t0.Add(61 * time.Second), Replicas: 4, Pods: pods(4), Metrics: idle}); d.DesiredReplicas != 1 {
			t.Fatalf("after the window: desired = %d, want 1", d.DesiredReplicas)
		}
	})
}

func TestNewRefusesInvalidSpecs(t *testing.T) {
	zero := spec(1, 5, cpuUtilization(50))
	zero.MinReplicas = int32p(0)
	utilPods := spec(1, 5, podsMetric("qps", "1"))
	utilPods.Metrics[0].Pods.Target.Type = autoscalingv2.UtilizationMetricType
	badPolicy := spec(1, 5, cpuUtilization(50))
	badPolicy.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 0, PeriodSeconds: 15}}}}
	zeroUtil := spec(1, 5, cpuUtilization(0))
	negPods := spec(1, 5, podsMetric("qps", "-500m"))
	noValue := spec(1, 5, podsMetric("qps", "1"))
	noValue.Metrics[0].Pods.Target.AverageValue = nil
	for _, tc := range []struct {
		name string
		spec autoscalingv2.HorizontalPodAutoscalerSpec
		want string
	}{
		{"zero utilization", zeroUtil, "spec.metrics[0].target.averageUtilization: must be at least 1, got 0"},
		{"negative average value", negPods, "spec.metrics[0].target.averageValue: must be positive, got -500m"},
		{"missing average value", noValue, "spec.metrics[0].target.averageValue: must be set for target type AverageValue"},
		{"minReplicas 0 with only per-pod metrics", zero, "spec.metrics: must specify at least one Object or External metric to support scaling to zero replicas"},
		{"max below min", spec(3, 2, cpuUtilization(50)), "spec.maxReplicas"},
		{"utilization on a pods metric", utilPods, `spec.metrics[0].target.type: "Utilization" is not allowed for Pods metrics`},
		{"zero policy value", badPolicy, "spec.behavior.scaleUp.policies[0].value: must be positive, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.spec, DefaultOptions())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaultsAndInputChecks(t *testing.T) {
	m := newModel(t, autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3})
	s := m.Spec()
	if *s.MinReplicas != 1 || len(s.Metrics) != 1 || *s.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Fatalf("defaults not applied: %+v", s)
	}
	if _, err := m.Step(Input{Now: t0, Replicas: 1}); err == nil || !strings.Contains(err.Error(), "metrics: got 0 readings for 1") {
		t.Fatalf("error = %v", err)
	}
}
