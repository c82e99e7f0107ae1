package hpa

import (
	"errors"
	"fmt"
	"math"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// tolerances are the per-direction bands around a ratio of 1.
type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool { return 1-t.down <= ratio && ratio <= 1+t.up }

func (t tolerances) String() string { return fmt.Sprintf("[%.2f, %.2f]", 1-t.down, 1+t.up) }

func (m *Model) tolerances() tolerances {
	t := tolerances{m.opts.Tolerance, m.opts.Tolerance}
	if b := m.spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// metric computes one metric's proposal; failReason is the ScalingActive
// reason when it fails.
func (s *sync) metric(spec autoscalingv2.MetricSpec, r Reading) (mr MetricResult, failReason string) {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		s.resource(&mr, spec.Resource.Name, "", spec.Resource.Target, r, "")
		return mr, "FailedGetResourceMetric"
	case autoscalingv2.ContainerResourceMetricSourceType:
		c := spec.ContainerResource
		s.resource(&mr, c.Name, c.Container, c.Target, r, " container")
		return mr, "FailedGetContainerResourceMetric"
	case autoscalingv2.PodsMetricSourceType:
		name := spec.Pods.Metric.Name
		mr.Name = "pods metric " + name
		if r.Err != nil {
			mr.Err = fmt.Errorf("unable to get metric %s: %v", name, r.Err)
			return mr, "FailedGetPodsMetric"
		}
		var avg int64
		mr.Proposal, avg, mr.Err = s.plain(&mr, copySamples(r.Pods), spec.Pods.Target.AverageValue.MilliValue(), "")
		mr.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
		return mr, "FailedGetPodsMetric"
	case autoscalingv2.ObjectMetricSourceType:
		o := spec.Object
		if o.Target.Type == autoscalingv2.ValueMetricType {
			mr.Name = fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name)
		} else {
			// The controller names a per-pod Object metric this way too.
			mr.Name = fmt.Sprintf("external metric %s(%+v)", o.Metric.Name, o.Metric.Selector)
		}
		if r.Err != nil {
			mr.Err = fmt.Errorf("unable to get metric %s on %s %s: %v", o.Metric.Name, o.DescribedObject.Kind, o.DescribedObject.Name, r.Err)
			return mr, "FailedGetObjectMetric"
		}
		s.total(&mr, r.Value, o.Target)
		return mr, "FailedGetObjectMetric"
	case autoscalingv2.ExternalMetricSourceType:
		e := spec.External
		mr.Name = fmt.Sprintf("external metric %s(%+v)", e.Metric.Name, e.Metric.Selector)
		if r.Err != nil {
			mr.Err = fmt.Errorf("unable to get external metric %s/%+v: %s", e.Metric.Name, e.Metric.Selector, r.Err)
			return mr, "FailedGetExternalMetric"
		}
		s.total(&mr, r.Value, e.Target)
		return mr, "FailedGetExternalMetric"
	}
	mr.Err = fmt.Errorf("unknown metric source type %q", spec.Type)
	return mr, "InvalidMetricSourceType"
}

// resource handles Resource and ContainerResource metrics.
func (s *sync) resource(mr *MetricResult, res v1.ResourceName, container string, t autoscalingv2.MetricTarget, r Reading, kind string) {
	if t.Type == autoscalingv2.AverageValueMetricType {
		mr.Name = fmt.Sprintf("%s resource", res)
		if r.Err != nil {
			mr.Err = fmt.Errorf("failed to get %s usage: unable to get metrics for resource %s: %v", res, res, r.Err)
			return
		}
		var avg int64
		var err error
		mr.Proposal, avg, err = s.plain(mr, copySamples(r.Pods), t.AverageValue.MilliValue(), res)
		if err != nil {
			mr.Err = fmt.Errorf("failed to get %s usage: %v", res, err)
			return
		}
		mr.Current.AverageValue = ptr(quantity(res, avg))
		return
	}
	mr.Name = fmt.Sprintf("%s%s resource utilization (percentage of request)", res, kind)
	if r.Err != nil {
		mr.Err = fmt.Errorf("failed to get %s utilization: unable to get metrics for resource %s: %v", res, res, r.Err)
		return
	}
	if err := s.utilization(mr, res, container, *t.AverageUtilization, copySamples(r.Pods)); err != nil {
		mr.Err = fmt.Errorf("failed to get %s utilization: %v", res, err)
	}
}

// utilization is the controller's GetResourceReplicas.
func (s *sync) utilization(mr *MetricResult, res v1.ResourceName, container string, target int32, metrics map[string]PodMetric) error {
	if len(s.in.Pods) == 0 {
		return errNoPods
	}
	g := s.group(metrics, res)
	drop(metrics, g.ignored)
	drop(metrics, g.unready)
	if len(metrics) == 0 {
		return errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	reqs, err := requests(s.in.Pods, container, res)
	if err != nil {
		return err
	}
	ratio, util, raw, err := utilizationRatio(metrics, reqs, target)
	if err != nil {
		return err
	}
	mr.Ratio = ratio
	mr.Current = autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: ptr(quantity(res, raw))}
	tol := s.m.tolerances()
	mr.note("%d%% of request on average over %d pod(s) with samples, target %d%%: ratio %.3f (tolerance %s)", util, len(metrics), target, ratio, tol)
	upWithUnready := len(g.unready) > 0 && ratio > 1
	if !upWithUnready && len(g.missing) == 0 {
		mr.Proposal = s.direct(mr, ratio, g.ready, tol)
		return nil
	}
	fallback := int64(max(100, target))
	if len(g.missing) > 0 {
		switch {
		case ratio < 1:
			for _, n := range g.missing {
				metrics[n] = PodMetric{Value: reqs[n] * fallback / 100}
			}
			mr.note("%d pod(s) without a sample (%s) count as using %d%% of request, as the metric is below target", len(g.missing), names(g.missing), fallback)
		case ratio > 1:
			for _, n := range g.missing {
				metrics[n] = PodMetric{Value: 0}
			}
			mr.note("%d pod(s) without a sample (%s) count as using 0%%, as the metric is above target", len(g.missing), names(g.missing))
		}
	}
	if upWithUnready {
		for _, n := range g.unready {
			metrics[n] = PodMetric{Value: 0}
		}
		mr.note("%d pending or not-ready pod(s) (%s) count as using 0%%, as the metric is above target", len(g.unready), names(g.unready))
	}
	newRatio, _, _, err := utilizationRatio(metrics, reqs, target)
	if err != nil {
		return err
	}
	mr.Proposal = s.adjusted(mr, ratio, newRatio, len(metrics), tol)
	return nil
}

// plain is the controller's calcPlainMetricReplicas (Pods metrics and
// Resource AverageValue targets); it returns the proposal and the average.
func (s *sync) plain(mr *MetricResult, metrics map[string]PodMetric, target int64, res v1.ResourceName) (int32, int64, error) {
	if len(s.in.Pods) == 0 {
		return 0, 0, errNoPods
	}
	g := s.group(metrics, res)
	drop(metrics, g.ignored)
	drop(metrics, g.unready)
	if len(metrics) == 0 {
		return 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, avg := usageRatio(metrics, target)
	mr.Ratio = ratio
	tol := s.m.tolerances()
	mr.note("average %s over %d pod(s) with samples, target %s: ratio %.3f (tolerance %s)", milli(avg), len(metrics), milli(target), ratio, tol)
	upWithUnready := len(g.unready) > 0 && ratio > 1
	if !upWithUnready && len(g.missing) == 0 {
		return s.direct(mr, ratio, g.ready, tol), avg, nil
	}
	if len(g.missing) > 0 {
		if ratio < 1 {
			for _, n := range g.missing {
				metrics[n] = PodMetric{Value: target}
			}
			mr.note("%d pod(s) without a sample (%s) count as using the target, as the metric is below target", len(g.missing), names(g.missing))
		} else {
			for _, n := range g.missing {
				metrics[n] = PodMetric{Value: 0}
			}
			mr.note("%d pod(s) without a sample (%s) count as using 0, as the metric is not below target", len(g.missing), names(g.missing))
		}
	}
	if upWithUnready {
		for _, n := range g.unready {
			metrics[n] = PodMetric{Value: 0}
		}
		mr.note("%d pending or not-ready pod(s) (%s) count as using 0, as the metric is above target", len(g.unready), names(g.unready))
	}
	newRatio, _ := usageRatio(metrics, target)
	return s.adjusted(mr, ratio, newRatio, len(metrics), tol), avg, nil
}

// direct is the proposal when every pod had a trusted sample.
func (s *sync) direct(mr *MetricResult, ratio float64, ready int, tol tolerances) int32 {
	if tol.within(ratio) {
		mr.note("within tolerance: keep %d", s.in.Replicas)
		return s.in.Replicas
	}
	p := int32(math.Ceil(ratio * float64(ready)))
	mr.note("ceil(%.3f x %d ready pod(s)) = %d", ratio, ready, p)
	return p
}

// adjusted is the proposal after missing and unready pods were filled in:
// no change when the new ratio is within tolerance or flips direction.
func (s *sync) adjusted(mr *MetricResult, ratio, newRatio float64, n int, tol tolerances) int32 {
	cur := s.in.Replicas
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		mr.note("with those pods the ratio is %.3f, within tolerance or the other way: keep %d", newRatio, cur)
		return cur
	}
	p := int32(math.Ceil(newRatio * float64(n)))
	if (newRatio < 1 && p > cur) || (newRatio > 1 && p < cur) {
		mr.note("with those pods the ratio is %.3f, but ceil(%.3f x %d) = %d goes the other way: keep %d", newRatio, newRatio, n, p, cur)
		return cur
	}
	mr.note("with those pods the ratio is %.3f: ceil(%.3f x %d pod(s)) = %d", newRatio, newRatio, n, p)
	return p
}

// total handles Object and External metrics: one value for the target.
func (s *sync) total(mr *MetricResult, usage int64, t autoscalingv2.MetricTarget) {
	tol := s.m.tolerances()
	if t.Type == autoscalingv2.AverageValueMetricType {
		target := t.AverageValue.MilliValue()
		status := s.in.StatusReplicas
		mr.Proposal = status
		ratio := float64(usage) / (float64(target) * float64(status))
		mr.Ratio = ratio
		mr.note("total %s over %d pod(s), target %s per pod: ratio %.3f (tolerance %s)", milli(usage), status, milli(target), ratio, tol)
		if !tol.within(ratio) {
			mr.Proposal = clampInt32(math.Ceil(float64(usage) / float64(target)))
			mr.note("ceil(%s / %s) = %d", milli(usage), milli(target), mr.Proposal)
		} else {
			mr.note("within tolerance: keep %d", status)
		}
		avg := usage
		if status > 0 {
			avg = int64(math.Ceil(float64(usage) / float64(status)))
		}
		mr.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
		return
	}
	target := t.Value.MilliValue()
	mr.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
	ratio := float64(usage) / float64(target)
	mr.Ratio = ratio
	mr.note("value %s, target %s: ratio %.3f (tolerance %s)", milli(usage), milli(target), ratio, tol)
	if s.in.Replicas == 0 {
		// From zero the controller uses neither the tolerance nor ready pods:
		// any value above 0 asks for at least one replica.
		mr.Proposal = clampInt32(math.Ceil(ratio))
		mr.note("from 0 replicas: ceil(%.3f) = %d", ratio, mr.Proposal)
		return
	}
	if tol.within(ratio) {
		mr.Proposal = s.in.Replicas
		mr.note("within tolerance: keep %d", s.in.Replicas)
		return
	}
	ready, err := s.readyPods()
	if err != nil {
		mr.Err = fmt.Errorf("unable to calculate ready pods: %s", err)
		return
	}
	mr.Proposal = clampInt32(math.Ceil(ratio * float64(ready)))
	mr.note("ceil(%.3f x %d ready pod(s)) = %d", ratio, ready, mr.Proposal)
}

func (mr *MetricResult) note(format string, args ...any) {
	mr.Notes = append(mr.Notes, fmt.Sprintf(format, args...))
}

// quantity formats a raw value as the controller reports it: bytes for
// memory, milli-units otherwise.
func quantity(res v1.ResourceName, raw int64) resource.Quantity {
	if res == v1.ResourceMemory {
		return *resource.NewMilliQuantity(raw, resource.BinarySI)
	}
	return *resource.NewMilliQuantity(raw, resource.DecimalSI)
}

func milli(v int64) string { return resource.NewMilliQuantity(v, resource.DecimalSI).String() }

func clampInt32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(f)
}

func names(ns []string) string {
	const show = 5
	if len(ns) <= show {
		return strings.Join(ns, ", ")
	}
	return strings.Join(ns[:show], ", ") + fmt.Sprintf(" and %d more", len(ns)-show)
}

func ptr[T any](v T) *T { return &v }
