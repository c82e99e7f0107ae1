// Package hpa is a pure model of the autoscaling/v2 HorizontalPodAutoscaler
// controller of kube-controller-manager (v1.37): given the HPA spec, the
// target's replica counts, its pods and the metric readings, it computes the
// replica count the controller would set, the conditions it would write
// (AbleToScale, ScalingActive, ScalingLimited) and, in plain words, why.
//
// It follows the controller's arithmetic, including its quirks:
//
//   - per metric, a proposal from the usage ratio (current / target), with
//     no change while the ratio is within the tolerance (0.1 by default, or
//     spec.behavior.scaleUp/scaleDown.tolerance);
//   - pods without a metric count as using 0 on a scale-up and the target
//     (100% of request, or the target if higher, for utilization) on a
//     scale-down; pending pods, and for CPU pods that are unready or still
//     starting, count as 0 on a scale-up and are left out otherwise; if the
//     pods the controller filled in would flip the direction, nothing changes;
//   - several metrics: the largest proposal wins; unreadable metrics stop
//     the HPA only when all fail or when the others propose a scale-down;
//   - without spec.behavior: the highest recommendation of the last
//     downscale-stabilization window (5m), then min/max and a scale-up cap
//     of max(2 x current, 4);
//   - with spec.behavior: per-direction stabilization windows, then the
//     Pods/Percent policies over their periods, chosen by selectPolicy
//     (Max, Min, Disabled), counted from the scale events the model keeps;
//   - scale to zero (the HPAScaleToZero gate, Options.ScaleToZero, on as in
//     1.37): minReplicas 0 needs an Object or External metric; the HPA
//     scales to 0 like to any count (after the scale-down window and
//     policies) and then holds the ScaledToZero condition, and only a
//     target it put at 0 is scaled up from 0, by ceil(value / target) of
//     its Object and External metrics; a target scaled to 0 by anyone
//     else is left alone (ScalingActive False, ScalingDisabled).
//
// Use:
//
//	m, err := hpa.New(hpaObject.Spec, hpa.DefaultOptions())
//	d, err := m.Step(hpa.Input{Now: now, Replicas: 2, StatusReplicas: 2, Pods: pods,
//		Metrics: []hpa.Reading{{Pods: map[string]hpa.PodMetric{"web-1": {Value: 900}, ...}}}})
//	// d.DesiredReplicas, d.Conditions, d.Explanation
//
// Readings are in milli-units, as the controller reads them (a pod using
// 0.9 CPU reads 900; a GPU at 60% utilization read as a Pods metric of 60
// reads 60000). Each Step is one controller sync: the model records its
// recommendation and, when the decision changes the replica count, the
// scale event (it assumes the caller applies it), so later steps see the
// same history the controller would. Time comes only from Input.Now.
//
// A Model is not safe for concurrent use.
package hpa
