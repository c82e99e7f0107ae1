package hpa

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// Options are the kube-controller-manager flags the HPA controller reads.
type Options struct {
	// Tolerance is the ratio band around 1 inside which nothing changes
	// (--horizontal-pod-autoscaler-tolerance, 0.1). The HPA's
	// behavior.scaleUp/scaleDown.tolerance overrides it per direction.
	Tolerance float64
	// DownscaleStabilization is the scale-down stabilization window used
	// when the HPA sets none (--horizontal-pod-autoscaler-downscale-stabilization, 5m).
	DownscaleStabilization time.Duration
	// CPUInitializationPeriod is how long after a pod starts its CPU samples
	// are trusted only once it is ready and a full window was measured since
	// (--horizontal-pod-autoscaler-cpu-initialization-period, 5m).
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is how long after start a pod that turned unready
	// counts as never having been ready
	// (--horizontal-pod-autoscaler-initial-readiness-delay, 30s).
	InitialReadinessDelay time.Duration
	// ScaleToZero is the HPAScaleToZero feature gate of the API server and
	// the controller (beta and on by default since Kubernetes 1.37, alpha
	// and off before). On, minReplicas 0 is accepted with an Object or
	// External metric, and a target the HPA itself scaled to 0 is scaled up
	// again from those metrics; off, minReplicas 0 is refused.
	ScaleToZero bool
	// ScaledToZeroCondition is the rule of the 1.37 controller: it scales a
	// target at 0 only when it put it there itself, as its ScaledToZero
	// condition records. Off, the model is the controller of 1.16 to 1.36
	// with the gate on: it reads the metrics of every target at 0 whose
	// minReplicas is 0, and writes no ScaledToZero condition.
	ScaledToZeroCondition bool
}

// DefaultOptions are kube-controller-manager's defaults.
func DefaultOptions() Options {
	return Options{
		Tolerance:               0.1,
		DownscaleStabilization:  5 * time.Minute,
		CPUInitializationPeriod: 5 * time.Minute,
		InitialReadinessDelay:   30 * time.Second,
		ScaleToZero:             true,
		ScaledToZeroCondition:   true,
	}
}

// PodMetric is one pod's sample of a Resource, ContainerResource or Pods
// metric.
type PodMetric struct {
	// Value in milli-units (Quantity.MilliValue).
	Value int64
	// Timestamp and Window say when and over how long it was measured; they
	// matter only for CPU samples of pods still in their initialization
	// period. A zero Timestamp means "now".
	Timestamp time.Time
	Window    time.Duration
}

// Reading is what the metrics APIs returned for one entry of spec.metrics.
type Reading struct {
	// Pods holds per-pod samples (Resource, ContainerResource, Pods metrics),
	// by pod name.
	Pods map[string]PodMetric
	// Value is an Object metric's value, or the sum of an External metric's
	// series, in milli-units.
	Value int64
	// Err is why the metric could not be read; the model reacts as the
	// controller does to a failed read.
	Err error
}

// Input is one controller sync.
type Input struct {
	// Now is the sync time.
	Now time.Time
	// Replicas is the target's spec.replicas (the scale subresource).
	Replicas int32
	// StatusReplicas is the target's status.replicas (pods that exist); the
	// per-pod Object and External targets divide by it.
	StatusReplicas int32
	// Pods are the pods the target's selector selects, with their phase,
	// Ready condition, start time and requests.
	Pods []*v1.Pod
	// Metrics has one reading per spec.metrics entry, in the same order.
	Metrics []Reading
	// ScaledToZero is the status of the HPA's ScaledToZero condition as the
	// API server holds it (true: the HPA itself scaled the target to 0).
	// Nil means the model's own record: what its earlier steps decided.
	ScaledToZero *bool
}

// Decision is what the controller would do in one sync.
type Decision struct {
	// CurrentReplicas is Input.Replicas.
	CurrentReplicas int32
	// DesiredReplicas is what the controller sets (status.desiredReplicas).
	DesiredReplicas int32
	// Rescale is true when DesiredReplicas differs from CurrentReplicas.
	Rescale bool
	// Reason is the SuccessfulRescale event's reason ("cpu resource
	// utilization (percentage of request) above target"); empty without a
	// rescale.
	Reason string
	// Metrics are the per-metric results, in spec order.
	Metrics []MetricResult
	// Conditions are AbleToScale, ScalingActive and ScalingLimited as the
	// controller sets them (types it would not touch in this sync are absent).
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	// Explanation says, in order, how the decision was reached.
	Explanation []string
}

// ScaledToZero is the condition type, new in Kubernetes 1.37, that the
// controller sets on every rescale: True when it scaled the target to 0,
// which is what lets it scale the target up from 0 later.
const ScaledToZero autoscalingv2.HorizontalPodAutoscalerConditionType = "ScaledToZero"

// Condition returns the condition of type t and whether it is set.
func (d Decision) Condition(t autoscalingv2.HorizontalPodAutoscalerConditionType) (autoscalingv2.HorizontalPodAutoscalerCondition, bool) {
	for _, c := range d.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
}

// MetricResult is one metric's proposal.
type MetricResult struct {
	// Name is the controller's wording ("cpu resource utilization
	// (percentage of request)", "pods metric gpu_util").
	Name string
	// Proposal is the replica count this metric asks for.
	Proposal int32
	// Current is the metric status the controller would report.
	Current autoscalingv2.MetricValueStatus
	// Ratio is current / target before any filling-in of missing pods.
	Ratio float64
	// Err is why no proposal could be made.
	Err error
	// Notes say, in plain words, how the proposal came out.
	Notes []string
}

// Model follows one HPA across syncs.
type Model struct {
	spec   autoscalingv2.HorizontalPodAutoscalerSpec
	opts   Options
	recs   []recommendation
	ups    []scaleEvent
	downs  []scaleEvent
	primed bool
	// scaledToZero is the ScaledToZero condition after the last step.
	scaledToZero bool
}

type recommendation struct {
	replicas int32
	at       time.Time
}

type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// New builds a model for spec. The spec gets the API server's defaults
// (minReplicas 1, a CPU 80% metric when none is given, behavior rules
// completed when behavior is set); a spec the API server would refuse is
// refused with the field named.
func New(spec autoscalingv2.HorizontalPodAutoscalerSpec, opts Options) (*Model, error) {
	if opts.Tolerance < 0 {
		return nil, fmt.Errorf("tolerance: must not be negative, got %g", opts.Tolerance)
	}
	if opts.DownscaleStabilization < 0 {
		return nil, fmt.Errorf("downscale stabilization: must not be negative, got %s", opts.DownscaleStabilization)
	}
	s := *spec.DeepCopy()
	applyDefaults(&s)
	if err := validate(&s, opts.ScaleToZero); err != nil {
		return nil, err
	}
	return &Model{spec: s, opts: opts}, nil
}

// ScaledToZeroNow reports the ScaledToZero condition the model holds after
// its last step.
func (m *Model) ScaledToZeroNow() bool { return m.scaledToZero }

// Spec returns the spec with defaults applied.
func (m *Model) Spec() autoscalingv2.HorizontalPodAutoscalerSpec { return *m.spec.DeepCopy() }

// Step runs one controller sync and records its recommendation and scale
// event. It fails only on input that does not match the spec.
func (m *Model) Step(in Input) (Decision, error) {
	if len(in.Metrics) != len(m.spec.Metrics) {
		return Decision{}, fmt.Errorf("metrics: got %d readings for %d spec.metrics entries", len(in.Metrics), len(m.spec.Metrics))
	}
	if in.Replicas < 0 || in.StatusReplicas < 0 {
		return Decision{}, fmt.Errorf("replicas: must not be negative, got %d (status %d)", in.Replicas, in.StatusReplicas)
	}
	if in.ScaledToZero != nil {
		m.scaledToZero = *in.ScaledToZero
	}
	s := &sync{m: m, in: in, d: Decision{CurrentReplicas: in.Replicas}}
	s.run()
	return s.d, nil
}

// errNoPods is the controller's error when the selector selects nothing.
var errNoPods = errors.New("no pods returned by selector while calculating replica count")

// CurrentMetrics is status.currentMetrics as the controller writes it
// after a sync with these per-metric results: one entry per metric of the
// spec, in spec order.
func CurrentMetrics(spec autoscalingv2.HorizontalPodAutoscalerSpec, results []MetricResult) []autoscalingv2.MetricStatus {
	out := make([]autoscalingv2.MetricStatus, 0, len(results))
	for i, r := range results {
		if i >= len(spec.Metrics) {
			break
		}
		m := spec.Metrics[i]
		s := autoscalingv2.MetricStatus{Type: m.Type}
		switch m.Type {
		case autoscalingv2.ResourceMetricSourceType:
			s.Resource = &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name, Current: r.Current}
		case autoscalingv2.ContainerResourceMetricSourceType:
			s.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: m.ContainerResource.Name,
				Container: m.ContainerResource.Container, Current: r.Current}
		case autoscalingv2.PodsMetricSourceType:
			s.Pods = &autoscalingv2.PodsMetricStatus{Metric: m.Pods.Metric, Current: r.Current}
		case autoscalingv2.ObjectMetricSourceType:
			s.Object = &autoscalingv2.ObjectMetricStatus{Metric: m.Object.Metric, DescribedObject: m.Object.DescribedObject, Current: r.Current}
		case autoscalingv2.ExternalMetricSourceType:
			s.External = &autoscalingv2.ExternalMetricStatus{Metric: m.External.Metric, Current: r.Current}
		}
		out = append(out, s)
	}
	return out
}
