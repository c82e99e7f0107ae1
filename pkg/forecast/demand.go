package forecast

import (
	"sort"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Demand is one inference workload's demand at one loop, as its HPA reads
// it: the shell reports it, the decision core keeps its history.
type Demand struct {
	// Namespace and Name are the workload the HPA scales.
	Namespace, Name string
	// Value is the HPA's metric over the whole workload now (a per-pod
	// metric summed over the pods, or an External metric's value).
	Value float64
	// PerReplica is the HPA's target for one replica of the same metric
	// (its target averageValue).
	PerReplica float64
	// Running is the replicas the workload has now; MaxReplicas the HPA's.
	Running, MaxReplicas int32
	// Template is one replica's pod: the warm capacity's shape.
	Template v1.PodTemplateSpec
}

// Key is namespace/name.
func (d Demand) Key() string { return d.Namespace + "/" + d.Name }

// History keeps, per workload, the samples a forecast needs: those within
// Keep of the newest. A workload not reported in a loop is forgotten.
type History struct {
	samples map[string][]Sample
}

// Keep is how much history a forecast with o reads: its error window, the
// lead its errors are measured at, and as much again for the level and
// trend to settle.
func (o Options) Keep() time.Duration { return 2 * (o.Window + o.Lead) }

// Record adds the loop's demands at now, and returns them sorted by key.
// A second reading at the same time replaces the first.
func (h *History) Record(now time.Time, demands []Demand, keep time.Duration) []Demand {
	if h.samples == nil {
		h.samples = map[string][]Sample{}
	}
	seen := make(map[string]bool, len(demands))
	for _, d := range demands {
		k := d.Key()
		seen[k] = true
		s := h.samples[k]
		if n := len(s); n > 0 && !s[n-1].At.Before(now) {
			s = s[:n-1]
		}
		s = append(s, Sample{At: now, Value: d.Value})
		i := 0
		for i < len(s)-1 && now.Sub(s[i].At) > keep {
			i++
		}
		h.samples[k] = s[i:]
	}
	for k := range h.samples {
		if !seen[k] {
			delete(h.samples, k)
		}
	}
	out := append([]Demand(nil), demands...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Of is the history of one workload, oldest first.
func (h *History) Of(key string) []Sample { return h.samples[key] }

// DemandOf reads an HPA's demand from its status as its controller last
// wrote it: the first of its metrics with an AverageValue target (a Pods
// metric, or an Object or External metric by average value), its current
// average times the current replicas (at zero replicas the average is the
// whole), against the target per replica; the replicas it asked for run.
// ok is false when the HPA has no such metric or no reading of it yet.
func DemandOf(h *autoscalingv2.HorizontalPodAutoscaler, template v1.PodTemplateSpec) (Demand, bool) {
	for i, m := range h.Spec.Metrics {
		target, current := averageTarget(m), (*resource.Quantity)(nil)
		if target == nil || target.Sign() <= 0 {
			continue
		}
		if i < len(h.Status.CurrentMetrics) && h.Status.CurrentMetrics[i].Type == m.Type {
			current = averageCurrent(h.Status.CurrentMetrics[i])
		}
		if current == nil {
			return Demand{}, false
		}
		return Demand{Namespace: h.Namespace, Name: h.Spec.ScaleTargetRef.Name,
			Value:      current.AsApproximateFloat64() * float64(max(1, h.Status.CurrentReplicas)),
			PerReplica: target.AsApproximateFloat64(), Running: h.Status.DesiredReplicas, MaxReplicas: h.Spec.MaxReplicas,
			Template: template}, true
	}
	return Demand{}, false
}

func averageTarget(m autoscalingv2.MetricSpec) *resource.Quantity {
	var t *autoscalingv2.MetricTarget
	switch {
	case m.Pods != nil:
		t = &m.Pods.Target
	case m.Object != nil:
		t = &m.Object.Target
	case m.External != nil:
		t = &m.External.Target
	}
	if t == nil || t.Type != autoscalingv2.AverageValueMetricType {
		return nil
	}
	return t.AverageValue
}

func averageCurrent(s autoscalingv2.MetricStatus) *resource.Quantity {
	switch {
	case s.Pods != nil:
		return s.Pods.Current.AverageValue
	case s.Object != nil:
		return s.Object.Current.AverageValue
	case s.External != nil:
		return s.External.Current.AverageValue
	}
	return nil
}
