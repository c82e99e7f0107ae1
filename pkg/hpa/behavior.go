package hpa

import (
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// The scale-up cap without spec.behavior: max(2 x current, 4).
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// normalize is the controller's path without spec.behavior: the highest
// recommendation of the downscale window, then min, max and the scale-up cap.
func (s *sync) normalize(desired int32) int32 {
	stabilized := s.m.stabilize(desired, s.in.Now)
	if stabilized != desired {
		s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation")
		s.explain("scale-down stabilization (%s): the highest recommendation of the window is %d, so %d is not used yet", s.m.opts.DownscaleStabilization, stabilized, desired)
	} else {
		s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	out, reason, msg := limitWithRules(s.in.Replicas, stabilized, *s.m.spec.MinReplicas, s.m.spec.MaxReplicas)
	s.limited(out, stabilized, reason, msg)
	return out
}

// stabilize keeps the recommendation and returns the highest one inside
// the downscale window; one recommendation older than the window is
// overwritten, as the controller does.
func (m *Model) stabilize(desired int32, now time.Time) int32 {
	highest := desired
	old := -1
	cutoff := now.Add(-m.opts.DownscaleStabilization)
	for i, r := range m.recs {
		if r.at.Before(cutoff) {
			old = i
		} else if r.replicas > highest {
			highest = r.replicas
		}
	}
	m.record(old, desired, now)
	return highest
}

func (m *Model) record(old int, desired int32, now time.Time) {
	if old >= 0 {
		m.recs[old] = recommendation{desired, now}
	} else {
		m.recs = append(m.recs, recommendation{desired, now})
	}
}

// limitWithRules is the controller's convertDesiredReplicasWithRules.
func limitWithRules(cur, desired, minR, maxR int32) (int32, string, string) {
	upLimit := int32(math.Max(scaleUpLimitFactor*float64(cur), scaleUpLimitMinimum))
	allowed, reason, msg := maxR, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxR > upLimit {
		allowed, reason, msg = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minR:
		return minR, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > allowed:
		return allowed, reason, msg
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// limited sets ScalingLimited and says what limited the count.
func (s *sync) limited(out, in int32, reason, msg string) {
	status := v1.ConditionFalse
	if out != in {
		status = v1.ConditionTrue
		s.explain("limited to %d: %s (%s)", out, msg, reason)
	}
	s.set(autoscalingv2.ScalingLimited, status, reason, msg)
}

// normalizeWithBehavior is the controller's path with spec.behavior.
func (s *sync) normalizeWithBehavior(desired int32) int32 {
	m, cur := s.m, s.in.Replicas
	up := m.spec.Behavior.ScaleUp
	upWindow := time.Duration(*up.StabilizationWindowSeconds) * time.Second
	downWindow := m.downWindow()
	stabilized, reason, msg := m.stabilizeWithBehavior(cur, desired, upWindow, downWindow, s.in.Now)
	if stabilized != desired {
		s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, reason, msg)
		s.explain("stabilization (scale-up window %s, scale-down window %s): recommendations in the windows bound the count to %d instead of %d", upWindow, downWindow, stabilized, desired)
	} else {
		s.set(autoscalingv2.AbleToScale, v1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	out, reason, msg := s.limitWithBehavior(stabilized)
	s.limited(out, stabilized, reason, msg)
	return out
}

// downWindow is the scale-down window: the HPA's, or the controller flag.
func (m *Model) downWindow() time.Duration {
	if w := m.spec.Behavior.ScaleDown.StabilizationWindowSeconds; w != nil {
		return time.Duration(*w) * time.Second
	}
	return time.Duration(int32(m.opts.DownscaleStabilization.Seconds())) * time.Second
}

// stabilizeWithBehavior bounds the recommendation by the lowest one of the
// scale-up window and the highest one of the scale-down window.
func (m *Model) stabilizeWithBehavior(cur, desired int32, upWindow, downWindow time.Duration, now time.Time) (int32, string, string) {
	upRec, downRec := desired, desired
	upCutoff, downCutoff := now.Add(-upWindow), now.Add(-downWindow)
	old := -1
	for i, r := range m.recs {
		if r.at.After(upCutoff) {
			upRec = min(upRec, r.replicas)
		}
		if r.at.After(downCutoff) {
			downRec = max(downRec, r.replicas)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			old = i
		}
	}
	rec := max(cur, upRec)
	rec = min(rec, downRec)
	m.record(old, desired, now)
	if desired >= cur {
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// limitWithBehavior is convertDesiredReplicasWithBehaviorRate.
func (s *sync) limitWithBehavior(desired int32) (int32, string, string) {
	m, cur := s.m, s.in.Replicas
	b, now := m.spec.Behavior, s.in.Now
	switch {
	case desired > cur:
		limit := scaleUpLimit(cur, m.ups, m.downs, b.ScaleUp, now)
		s.explain("scale-up policies %s allow up to %d replicas now", describeRules(b.ScaleUp), max(limit, cur))
		limit = max(limit, cur)
		allowed, reason, msg := m.spec.MaxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if allowed > limit {
			allowed, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > allowed {
			return allowed, reason, msg
		}
	case desired < cur:
		limit := scaleDownLimit(cur, m.ups, m.downs, b.ScaleDown, now)
		s.explain("scale-down policies %s allow down to %d replicas now", describeRules(b.ScaleDown), min(limit, cur))
		limit = min(limit, cur)
		allowed, reason, msg := *m.spec.MinReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if allowed < limit {
			allowed, reason, msg = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < allowed {
			return allowed, reason, msg
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// changeInPeriod sums the replica changes of events newer than period.
func changeInPeriod(periodSeconds int32, events []scaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the scale-up policies allow: each
// policy counts from the size at the start of its period.
func scaleUpLimit(cur int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return cur
	}
	pick, result := maxInt32, int32(math.MinInt32)
	if *r.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = minInt32, math.MaxInt32
	}
	for _, p := range r.Policies {
		start := cur - changeInPeriod(p.PeriodSeconds, ups, now) + changeInPeriod(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is the fewest replicas the scale-down policies allow.
func scaleDownLimit(cur int32, ups, downs []scaleEvent, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return cur
	}
	pick, result := minInt32, int32(math.MaxInt32)
	if *r.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = maxInt32, math.MinInt32
	}
	for _, p := range r.Policies {
		start := cur - changeInPeriod(p.PeriodSeconds, ups, now) + changeInPeriod(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }

// storeScaleEvent records a rescale for the policies, reusing the slot of
// an event older than the direction's longest policy period, as the
// controller does. Without spec.behavior nothing is kept.
func (m *Model) storeScaleEvent(prev, next int32, now time.Time) {
	b := m.spec.Behavior
	if b == nil {
		return
	}
	if next > prev {
		m.ups = storeEvent(m.ups, next-prev, longestPeriod(b.ScaleUp), now)
	} else {
		m.downs = storeEvent(m.downs, prev-next, longestPeriod(b.ScaleDown), now)
	}
}

func storeEvent(events []scaleEvent, change, longest int32, now time.Time) []scaleEvent {
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	old := -1
	for i := range events {
		if events[i].at.Before(cutoff) {
			events[i].outdated = true
		}
		if events[i].outdated {
			old = i
		}
	}
	e := scaleEvent{change: change, at: now}
	if old >= 0 {
		events[old] = e
		return events
	}
	return append(events, e)
}

func longestPeriod(r *autoscalingv2.HPAScalingRules) int32 {
	var p int32
	for _, pol := range r.Policies {
		p = max(p, pol.PeriodSeconds)
	}
	return p
}

// describeRules writes rules the way people read them: "[Pods 4 per 15s,
// Percent 100% per 15s] (selectPolicy Max)".
func describeRules(r *autoscalingv2.HPAScalingRules) string {
	parts := make([]string, 0, len(r.Policies))
	for _, p := range r.Policies {
		unit := ""
		if p.Type == autoscalingv2.PercentScalingPolicy {
			unit = "%"
		}
		parts = append(parts, fmt.Sprintf("%s %d%s per %ds", p.Type, p.Value, unit, p.PeriodSeconds))
	}
	return fmt.Sprintf("[%s] (selectPolicy %s)", strings.Join(parts, ", "), *r.SelectPolicy)
}
