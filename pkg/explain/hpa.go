package explain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// hpaEvents is how many of the HPA's latest events a report shows.
const hpaEvents = 3

// HPA explains what a HorizontalPodAutoscaler computed: its metrics against
// their targets, its replica counts and conditions as the controller wrote
// them, and the controller's arithmetic replayed by pkg/hpa on the metrics
// read now.
func (e *Explainer) HPA(ctx context.Context, arg string) (Report, error) {
	ns, name, err := splitName(arg)
	if err != nil {
		return Report{}, err
	}
	key := ns + "/" + name
	h, err := e.o.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Report{}, notFound("HorizontalPodAutoscaler", key, err)
	}
	r := Report{Object: "hpa " + key}
	ref := h.Spec.ScaleTargetRef
	minR := int32(1)
	if h.Spec.MinReplicas != nil {
		minR = *h.Spec.MinReplicas
	}
	desired := strconv.Itoa(int(h.Status.DesiredReplicas))
	if h.Status.DesiredReplicas == 0 && h.Status.CurrentReplicas > 0 {
		desired = "not computed"
	}
	r.Verdict = fmt.Sprintf("%d replica(s), desired %s (min %d, max %d)", h.Status.CurrentReplicas, desired, minR, h.Spec.MaxReplicas)
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status == v1.ConditionFalse {
			r.Verdict += "; not scaling: " + c.Reason
		}
	}
	r.add("target: %s %s", ref.Kind, ref.Name)
	if h.Status.LastScaleTime != nil {
		r.add("last scaled %s", e.ago(h.Status.LastScaleTime.Time))
	}
	for i, m := range h.Spec.Metrics {
		cur := "unknown"
		if i < len(h.Status.CurrentMetrics) {
			cur = currentValue(h.Status.CurrentMetrics[i])
		}
		r.add("metric %s: current %s, target %s", metricName(m), cur, targetValue(m))
	}
	for _, c := range h.Status.Conditions {
		r.add("condition %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
	}
	if events, err := e.events(ctx, ns, "HorizontalPodAutoscaler", name); err == nil {
		for i := 0; i < len(events) && i < hpaEvents; i++ {
			r.add("event %s (%s): %s", events[i].Reason, e.ago(eventTime(events[i])), events[i].Message)
		}
	}
	e.replay(ctx, h, &r)
	return r, nil
}

// replay runs the controller's arithmetic on the metrics read now.
func (e *Explainer) replay(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, r *Report) {
	model, err := hpa.New(h.Spec, e.o.HPA)
	if err != nil {
		r.add("model: the spec is not valid: %v", err)
		return
	}
	in, err := e.modelInput(ctx, h, model.Spec())
	if err != nil {
		r.add("model: cannot read the target: %v", err)
		return
	}
	e.unservedPods(ctx, h.Namespace, model.Spec(), in, r)
	d, err := model.Step(in)
	if err != nil {
		r.add("model: %v", err)
		return
	}
	r.add("model (the controller's arithmetic on the metrics read now):")
	for _, m := range d.Metrics {
		for _, n := range m.Notes {
			r.add("  %s: %s", m.Name, n)
		}
	}
	for _, line := range d.Explanation {
		r.add("  %s", line)
	}
	r.add("  (the model starts without the controller's history of recommendations and scale events, so it holds a scale-down for the stabilization window as the controller does for a new HPA)")
}

// modelInput reads the target's scale, its pods and every metric.
func (e *Explainer) modelInput(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.HorizontalPodAutoscalerSpec) (hpa.Input, error) {
	ns := h.Namespace
	specR, statusR, selText, err := e.scale(ctx, ns, spec.ScaleTargetRef)
	if err != nil {
		return hpa.Input{}, err
	}
	sel, err := labels.Parse(selText)
	if err != nil {
		return hpa.Input{}, fmt.Errorf("selector %q: %w", selText, err)
	}
	pl, err := e.o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return hpa.Input{}, fmt.Errorf("listing pods: %w", err)
	}
	in := hpa.Input{Now: e.o.Clock.Now(), Replicas: specR, StatusReplicas: statusR}
	for i := range pl.Items {
		in.Pods = append(in.Pods, &pl.Items[i])
	}
	for _, m := range spec.Metrics {
		in.Metrics = append(in.Metrics, e.read(ctx, ns, sel, m))
	}
	return in, nil
}

// scale reads the scale subresource of the kinds the apps API serves.
func (e *Explainer) scale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference) (int32, int32, string, error) {
	apps := e.o.Client.AppsV1()
	var get func(context.Context, string, metav1.GetOptions) (*autoscalingv1.Scale, error)
	switch ref.Kind {
	case "Deployment":
		get = apps.Deployments(ns).GetScale
	case "ReplicaSet":
		get = apps.ReplicaSets(ns).GetScale
	case "StatefulSet":
		get = apps.StatefulSets(ns).GetScale
	default:
		return 0, 0, "", fmt.Errorf("scale target kind %q: the model reads Deployments, ReplicaSets and StatefulSets", ref.Kind)
	}
	s, err := get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, "", notFound(strings.ToLower(ref.Kind), ns+"/"+ref.Name, err)
	}
	return s.Spec.Replicas, s.Status.Replicas, s.Status.Selector, nil
}

// read asks the metrics source for one metric, as the controller would.
func (e *Explainer) read(ctx context.Context, ns string, pods labels.Selector, m autoscalingv2.MetricSpec) hpa.Reading {
	if e.o.Metrics == nil {
		return hpa.Reading{Err: errors.New("no metrics source configured")}
	}
	var r hpa.Reading
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		r.Pods, r.Err = e.o.Metrics.Resource(ctx, ns, pods, m.Resource.Name, "")
	case autoscalingv2.ContainerResourceMetricSourceType:
		r.Pods, r.Err = e.o.Metrics.Resource(ctx, ns, pods, m.ContainerResource.Name, m.ContainerResource.Container)
	case autoscalingv2.PodsMetricSourceType:
		ms, err := metav1.LabelSelectorAsSelector(m.Pods.Metric.Selector)
		if err != nil {
			return hpa.Reading{Err: err}
		}
		r.Pods, r.Err = e.o.Metrics.Pods(ctx, ns, pods, m.Pods.Metric.Name, ms)
	case autoscalingv2.ObjectMetricSourceType:
		ms, err := metav1.LabelSelectorAsSelector(m.Object.Metric.Selector)
		if err != nil {
			return hpa.Reading{Err: err}
		}
		r.Value, r.Err = e.o.Metrics.Object(ctx, ns, m.Object.DescribedObject, m.Object.Metric.Name, ms)
	case autoscalingv2.ExternalMetricSourceType:
		ms, err := metav1.LabelSelectorAsSelector(m.External.Metric.Selector)
		if err != nil {
			return hpa.Reading{Err: err}
		}
		r.Value, r.Err = e.o.Metrics.External(ctx, ns, m.External.Metric.Name, ms)
	}
	return r
}

// metricName names a metric spec for people.
func metricName(m autoscalingv2.MetricSpec) string {
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		return "resource " + string(m.Resource.Name)
	case autoscalingv2.ContainerResourceMetricSourceType:
		return fmt.Sprintf("resource %s of container %s", m.ContainerResource.Name, m.ContainerResource.Container)
	case autoscalingv2.PodsMetricSourceType:
		return "pods " + m.Pods.Metric.Name
	case autoscalingv2.ObjectMetricSourceType:
		return fmt.Sprintf("object %s of %s %s", m.Object.Metric.Name, m.Object.DescribedObject.Kind, m.Object.DescribedObject.Name)
	case autoscalingv2.ExternalMetricSourceType:
		return "external " + m.External.Metric.Name
	}
	return string(m.Type)
}

func targetValue(m autoscalingv2.MetricSpec) string {
	var t autoscalingv2.MetricTarget
	switch {
	case m.Resource != nil:
		t = m.Resource.Target
	case m.ContainerResource != nil:
		t = m.ContainerResource.Target
	case m.Pods != nil:
		t = m.Pods.Target
	case m.Object != nil:
		t = m.Object.Target
	case m.External != nil:
		t = m.External.Target
	}
	switch {
	case t.AverageUtilization != nil:
		return fmt.Sprintf("%d%% of request", *t.AverageUtilization)
	case t.AverageValue != nil:
		return t.AverageValue.String() + " per pod"
	case t.Value != nil:
		return t.Value.String()
	}
	return "unset"
}

func currentValue(s autoscalingv2.MetricStatus) string {
	var c *autoscalingv2.MetricValueStatus
	switch {
	case s.Resource != nil:
		c = &s.Resource.Current
	case s.ContainerResource != nil:
		c = &s.ContainerResource.Current
	case s.Pods != nil:
		c = &s.Pods.Current
	case s.Object != nil:
		c = &s.Object.Current
	case s.External != nil:
		c = &s.External.Current
	default:
		return "unknown"
	}
	switch {
	case c.AverageUtilization != nil:
		return fmt.Sprintf("%d%% of request", *c.AverageUtilization)
	case c.AverageValue != nil:
		return c.AverageValue.String() + " per pod"
	case c.Value != nil:
		return c.Value.String()
	}
	return "unknown"
}
