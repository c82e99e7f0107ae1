package hpa

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The API server's defaults for autoscaling/v2 (pkg/apis/autoscaling/v2).
const (
	defaultCPUUtilization     int32 = 80
	defaultScaleUpPods        int32 = 4
	defaultScaleUpPercent     int32 = 100
	defaultScaleDownPercent   int32 = 100
	defaultPolicyPeriod       int32 = 15
	defaultScaleUpStabilizing int32 = 0
)

// applyDefaults fills what the API server fills when the HPA is created.
func applyDefaults(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
	if s.MinReplicas == nil {
		one := int32(1)
		s.MinReplicas = &one
	}
	if len(s.Metrics) == 0 {
		u := defaultCPUUtilization
		s.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}}}}
	}
	if s.Behavior != nil {
		s.Behavior.ScaleUp = completeRules(s.Behavior.ScaleUp, defaultScaleUpRules())
		s.Behavior.ScaleDown = completeRules(s.Behavior.ScaleDown, defaultScaleDownRules())
	}
}

func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	window, sel := defaultScaleUpStabilizing, autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: defaultScaleUpPods, PeriodSeconds: defaultPolicyPeriod},
			{Type: autoscalingv2.PercentScalingPolicy, Value: defaultScaleUpPercent, PeriodSeconds: defaultPolicyPeriod},
		}}
}

// defaultScaleDownRules leaves the window unset: the controller fills it
// from its --horizontal-pod-autoscaler-downscale-stabilization flag.
func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{SelectPolicy: &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: defaultScaleDownPercent, PeriodSeconds: defaultPolicyPeriod},
		}}
}

// completeRules copies every set field of from over the defaults.
func completeRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}

// validate refuses what the API server refuses. minReplicas 0 needs the
// HPAScaleToZero gate and an Object or External metric: with only per-pod
// metrics nothing could be read at 0 replicas to scale up again.
func validate(s *autoscalingv2.HorizontalPodAutoscalerSpec, scaleToZero bool) error {
	lowest := int32(1)
	if scaleToZero {
		lowest = 0
	}
	if *s.MinReplicas < lowest {
		if lowest == 1 && *s.MinReplicas == 0 {
			return fmt.Errorf("spec.minReplicas: must be at least 1 (the HPAScaleToZero feature gate is off), got 0")
		}
		return fmt.Errorf("spec.minReplicas: must be at least %d, got %d", lowest, *s.MinReplicas)
	}
	if *s.MinReplicas == 0 && !hasObjectOrExternal(s.Metrics) {
		return fmt.Errorf("spec.metrics: must specify at least one Object or External metric to support scaling to zero replicas (minReplicas is 0)")
	}
	if s.MaxReplicas < *s.MinReplicas {
		return fmt.Errorf("spec.maxReplicas: must be at least minReplicas (%d), got %d", *s.MinReplicas, s.MaxReplicas)
	}
	for i := range s.Metrics {
		if err := validateMetric(&s.Metrics[i]); err != nil {
			return fmt.Errorf("spec.metrics[%d].%w", i, err)
		}
	}
	if b := s.Behavior; b != nil {
		if err := validateRules("scaleUp", b.ScaleUp); err != nil {
			return err
		}
		if err := validateRules("scaleDown", b.ScaleDown); err != nil {
			return err
		}
	}
	return nil
}

// hasObjectOrExternal is true when a metric can be read with no pods.
func hasObjectOrExternal(ms []autoscalingv2.MetricSpec) bool {
	for _, m := range ms {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

func validateMetric(m *autoscalingv2.MetricSpec) error {
	var t *autoscalingv2.MetricTarget
	allowed := map[autoscalingv2.MetricTargetType]bool{}
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return fmt.Errorf("resource: must be set for type Resource")
		}
		t = &m.Resource.Target
		allowed[autoscalingv2.UtilizationMetricType], allowed[autoscalingv2.AverageValueMetricType] = true, true
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil || m.ContainerResource.Container == "" {
			return fmt.Errorf("containerResource: must be set, with a container, for type ContainerResource")
		}
		t = &m.ContainerResource.Target
		allowed[autoscalingv2.UtilizationMetricType], allowed[autoscalingv2.AverageValueMetricType] = true, true
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			return fmt.Errorf("pods: must be set for type Pods")
		}
		t = &m.Pods.Target
		allowed[autoscalingv2.AverageValueMetricType] = true
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object == nil {
			return fmt.Errorf("object: must be set for type Object")
		}
		t = &m.Object.Target
		allowed[autoscalingv2.ValueMetricType], allowed[autoscalingv2.AverageValueMetricType] = true, true
	case autoscalingv2.ExternalMetricSourceType:
		if m.External == nil {
			return fmt.Errorf("external: must be set for type External")
		}
		t = &m.External.Target
		allowed[autoscalingv2.ValueMetricType], allowed[autoscalingv2.AverageValueMetricType] = true, true
	default:
		return fmt.Errorf("type: unknown metric source type %q", m.Type)
	}
	if !allowed[t.Type] {
		return fmt.Errorf("target.type: %q is not allowed for %s metrics", t.Type, m.Type)
	}
	switch t.Type {
	case autoscalingv2.UtilizationMetricType:
		if t.AverageUtilization == nil {
			return fmt.Errorf("target.averageUtilization: must be set for a Utilization target")
		}
		if *t.AverageUtilization < 1 {
			return fmt.Errorf("target.averageUtilization: must be at least 1, got %d", *t.AverageUtilization)
		}
	case autoscalingv2.AverageValueMetricType:
		return checkPositive("target.averageValue", t.AverageValue, t.Type)
	case autoscalingv2.ValueMetricType:
		return checkPositive("target.value", t.Value, t.Type)
	}
	return nil
}

// checkPositive refuses a missing, zero or negative target quantity,
// naming the field and the value.
func checkPositive(field string, q *resource.Quantity, typ autoscalingv2.MetricTargetType) error {
	if q == nil {
		return fmt.Errorf("%s: must be set for target type %s", field, typ)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%s: must be positive, got %s", field, q)
	}
	return nil
}

func validateRules(dir string, r *autoscalingv2.HPAScalingRules) error {
	field := "spec.behavior." + dir
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		return fmt.Errorf("%s.stabilizationWindowSeconds: must be within 0..3600, got %d", field, *w)
	}
	switch *r.SelectPolicy {
	case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
	default:
		return fmt.Errorf("%s.selectPolicy: must be Max, Min or Disabled, got %q", field, *r.SelectPolicy)
	}
	if len(r.Policies) == 0 && *r.SelectPolicy != autoscalingv2.DisabledPolicySelect {
		return fmt.Errorf("%s.policies: must have at least one policy", field)
	}
	for i, p := range r.Policies {
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			return fmt.Errorf("%s.policies[%d].type: must be Pods or Percent, got %q", field, i, p.Type)
		}
		if p.Value <= 0 {
			return fmt.Errorf("%s.policies[%d].value: must be positive, got %d", field, i, p.Value)
		}
		if p.PeriodSeconds <= 0 || p.PeriodSeconds > 1800 {
			return fmt.Errorf("%s.policies[%d].periodSeconds: must be within 1..1800, got %d", field, i, p.PeriodSeconds)
		}
	}
	if r.Tolerance != nil && r.Tolerance.Sign() < 0 {
		return fmt.Errorf("%s.tolerance: must not be negative, got %s", field, r.Tolerance)
	}
	return nil
}
