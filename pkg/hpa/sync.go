package hpa

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// sync is one controller sync in progress.
type sync struct {
	m  *Model
	in Input
	d  Decision
}

// run follows the controller's reconcileAutoscaler.
func (s *sync) run() {
	m, cur := s.m, s.in.Replicas
	s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	if !m.primed {
		// The controller's first sync counts the current size as a
		// recommendation, so a new HPA does not scale down at once.
		m.recs = append(m.recs, recommendation{cur, s.in.Now})
		m.primed = true
	}
	minR, maxR := *m.spec.MinReplicas, m.spec.MaxReplicas
	var desired int32
	rescale, compute := true, false
	switch {
	case cur == 0:
		compute = s.fromZero(minR)
		rescale = compute
	case cur > maxR:
		desired, s.d.Reason = maxR, "Current number of replicas above Spec.MaxReplicas"
		s.explain("%d replicas is above maxReplicas %d: set to %d without looking at metrics", cur, maxR, maxR)
	case cur < minR:
		desired, s.d.Reason = minR, "Current number of replicas below Spec.MinReplicas"
		s.explain("%d replicas is below minReplicas %d: set to %d without looking at metrics", cur, minR, minR)
	default:
		compute = true
	}
	if compute {
		proposal, name, ok := s.metrics()
		if !ok {
			s.d.DesiredReplicas = cur
			s.explain("no replica count could be computed: the HPA keeps %d replicas and changes nothing", cur)
			return
		}
		desired = max(proposal, 0)
		switch {
		case desired > cur:
			s.d.Reason = name + " above target"
		case desired < cur:
			s.d.Reason = "All metrics below target"
		}
		if m.spec.Behavior == nil {
			desired = s.normalize(desired)
		} else {
			desired = s.normalizeWithBehavior(desired)
		}
		if cur == 0 && minR != 0 && desired < minR {
			// minReplicas was raised while the HPA held the target at 0.
			desired = minR
			if s.d.Reason == "" {
				s.d.Reason = "Current number of replicas below Spec.MinReplicas"
			}
			s.explain("the target is at 0 and minReplicas is now %d: scale to at least %d", minR, minR)
		}
		rescale = desired != cur
	}
	if !rescale {
		s.d.DesiredReplicas, s.d.Reason = cur, ""
		if cur > 0 || compute {
			s.explain("result: stay at %d replicas", cur)
		}
		return
	}
	s.d.DesiredReplicas, s.d.Rescale = desired, true
	s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired))
	s.explain("result: scale from %d to %d (%s)", cur, desired, s.d.Reason)
	m.storeScaleEvent(cur, desired, s.in.Now)
	s.recordScaledToZero(cur, desired)
}

// fromZero decides whether a target at 0 replicas is scaled from metrics.
// The controller does so only when it put the target there itself (its
// ScaledToZero condition is True) and an Object or External metric can be
// read without pods, or when minReplicas was raised above 0 since; a target
// someone else scaled to 0 is left alone, as before scale to zero existed.
func (s *sync) fromZero(minR int32) bool {
	m := s.m
	if m.opts.ScaleToZero && !m.opts.ScaledToZeroCondition && minR == 0 {
		s.explain("the target is at 0 replicas and minReplicas is 0: its metrics decide whether it scales up (the controller before 1.37)")
		return true
	}
	atZeroByHPA := m.opts.ScaleToZero && m.opts.ScaledToZeroCondition && m.scaledToZero
	if (minR != 0 && atZeroByHPA) || (atZeroByHPA && hasObjectOrExternal(m.spec.Metrics)) {
		s.explain("the target is at 0 replicas, where the HPA scaled it (ScaledToZero): its metrics decide whether it scales up")
		return true
	}
	s.set(autoscalingv2.ScalingActive, v1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
	switch {
	case !m.opts.ScaleToZero:
		s.explain("the target has 0 replicas: the HPA does not scale it (scale to zero is off)")
	case minR == 0:
		s.explain("the target has 0 replicas but the HPA did not put it there (no ScaledToZero condition): scaling is disabled until someone scales it up")
	default:
		s.explain("the target has 0 replicas (scaled there by hand): the HPA does not scale it until someone scales it up")
	}
	return false
}

// recordScaledToZero is the ScaledToZero condition the controller writes on
// every rescale; with the gate off it removes the condition.
func (s *sync) recordScaledToZero(cur, desired int32) {
	m := s.m
	if !m.opts.ScaleToZero || !m.opts.ScaledToZeroCondition {
		m.scaledToZero = false
		return
	}
	m.scaledToZero = cur > 0 && desired == 0 && *m.spec.MinReplicas == 0 && hasObjectOrExternal(m.spec.Metrics)
	if m.scaledToZero {
		s.set(ScaledToZero, v1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero")
		s.explain("the HPA scaled the target to 0 (ScaledToZero): it scales it up again when an Object or External metric asks for replicas")
		return
	}
	s.set(ScaledToZero, v1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
}

// metrics is computeReplicasForMetrics: the largest proposal wins; it
// fails when every metric fails, or when some fail and the rest would
// scale down.
func (s *sync) metrics() (int32, string, bool) {
	var replicas int32
	var name string
	invalid := 0
	var failCond autoscalingv2.HorizontalPodAutoscalerCondition
	for i, spec := range s.m.spec.Metrics {
		mr, reason := s.metric(spec, s.in.Metrics[i])
		s.d.Metrics = append(s.d.Metrics, mr)
		if mr.Err != nil {
			if invalid == 0 {
				failCond = condition(autoscalingv2.ScalingActive, v1.ConditionFalse, reason, "the HPA was unable to compute the replica count: "+mr.Err.Error())
			}
			invalid++
			s.explain("metric %s: cannot be computed: %v", mr.Name, mr.Err)
			continue
		}
		s.explain("metric %s proposes %d replicas", mr.Name, mr.Proposal)
		if replicas == 0 || mr.Proposal > replicas {
			replicas, name = mr.Proposal, mr.Name
		}
	}
	total := len(s.m.spec.Metrics)
	if invalid >= total || (invalid > 0 && replicas < s.in.Replicas) {
		s.setCondition(failCond)
		if invalid < total {
			s.explain("%d of %d metrics failed and the others propose a scale-down (%d), which the HPA does not do on partial data", invalid, total, replicas)
		}
		return -1, "", false
	}
	s.set(autoscalingv2.ScalingActive, v1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+name)
	if total > 1 {
		s.explain("the largest proposal wins: %d (%s)", replicas, name)
	}
	return replicas, name, true
}

// set records a condition as the controller's setCondition does: one per
// type, the latest wins.
func (s *sync) set(t autoscalingv2.HorizontalPodAutoscalerConditionType, status v1.ConditionStatus, reason, msg string) {
	s.setCondition(condition(t, status, reason, msg))
}

func (s *sync) setCondition(c autoscalingv2.HorizontalPodAutoscalerCondition) {
	for i := range s.d.Conditions {
		if s.d.Conditions[i].Type == c.Type {
			s.d.Conditions[i] = c
			return
		}
	}
	s.d.Conditions = append(s.d.Conditions, c)
}

func condition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status v1.ConditionStatus, reason, msg string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: status, Reason: reason, Message: msg}
}

func (s *sync) explain(format string, args ...any) {
	s.d.Explanation = append(s.d.Explanation, fmt.Sprintf(format, args...))
}
