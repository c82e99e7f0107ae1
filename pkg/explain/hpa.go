package explain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// hpaEvents is how many of the HPA's latest events a report shows.
const hpaEvents = 3

// HPAAnswer is what a HorizontalPodAutoscaler computed, as the controller
// wrote it, where each metric comes from, and the controller's arithmetic
// replayed on the metrics read now.
type HPAAnswer struct {
	Namespace       string     `json:"namespace"`
	Name            string     `json:"name"`
	ScaleTarget     string     `json:"scaleTarget"`
	CurrentReplicas int32      `json:"currentReplicas"`
	DesiredReplicas int32      `json:"desiredReplicas"`
	MinReplicas     int32      `json:"minReplicas"`
	MaxReplicas     int32      `json:"maxReplicas"`
	LastScaleTime   *time.Time `json:"lastScaleTime,omitempty"`
	// Metrics are the spec's metrics, in order, each with its current
	// value from the HPA's status and its source.
	Metrics    []HPAMetric                                      `json:"metrics"`
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition `json:"conditions,omitempty"`
	Events     []EventRecord                                    `json:"events,omitempty"`
	// Unserved are, per Pods metric, the pods its list left out that the
	// metrics API, asked for each alone, says why it has no sample for.
	Unserved []UnservedPods `json:"unserved,omitempty"`
	// Model is the replay; ModelError why there is none.
	Model      *HPAModel `json:"model,omitempty"`
	ModelError string    `json:"modelError,omitempty"`
}

// HPAMetric is one metric of an HPA and where its value comes from.
type HPAMetric struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Target  string `json:"target"`
	// API serves the value: metrics.k8s.io, custom.metrics.k8s.io or
	// external.metrics.k8s.io.
	API string `json:"api"`
	// Rule is the metrics-adapter rule that serves it and the PromQL a
	// request of the HPA's runs; RuleError says why it is not known.
	Rule      *RuleAnswer `json:"rule,omitempty"`
	RuleError string      `json:"ruleError,omitempty"`
}

// HPAModel is the controller's arithmetic replayed by pkg/hpa.
type HPAModel struct {
	CurrentReplicas int32         `json:"currentReplicas"`
	DesiredReplicas int32         `json:"desiredReplicas"`
	Rescale         bool          `json:"rescale"`
	Reason          string        `json:"reason,omitempty"`
	Metrics         []ModelMetric `json:"metrics"`
	Explanation     []string      `json:"explanation"`
}

// ModelMetric is one metric's proposal in the replay.
type ModelMetric struct {
	Name     string   `json:"name"`
	Proposal int32    `json:"proposal"`
	Ratio    float64  `json:"ratio"`
	Error    string   `json:"error,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// HPA explains what a HorizontalPodAutoscaler computed: its metrics against
// their targets and the adapter rule and PromQL behind each, its replica
// counts and conditions as the controller wrote them, and the controller's
// arithmetic replayed by pkg/hpa on the metrics read now.
func (e *Explainer) HPA(ctx context.Context, t Target) (Report, error) {
	key := t.Namespace + "/" + t.Name
	h, err := e.o.Client.AutoscalingV2().HorizontalPodAutoscalers(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return Report{}, e.objectNotFound(ctx, t, "HorizontalPodAutoscaler", err)
	}
	a := &HPAAnswer{Namespace: t.Namespace, Name: t.Name, ScaleTarget: h.Spec.ScaleTargetRef.Kind + " " + h.Spec.ScaleTargetRef.Name,
		CurrentReplicas: h.Status.CurrentReplicas, DesiredReplicas: h.Status.DesiredReplicas, MinReplicas: 1,
		MaxReplicas: h.Spec.MaxReplicas, Conditions: h.Status.Conditions}
	if h.Spec.MinReplicas != nil {
		a.MinReplicas = *h.Spec.MinReplicas
	}
	if h.Status.LastScaleTime != nil {
		a.LastScaleTime = timeOf(h.Status.LastScaleTime.Time)
	}
	if events, err := e.events(ctx, eventQuery{namespace: t.Namespace, kind: "HorizontalPodAutoscaler", name: t.Name}); err == nil {
		for i := 0; i < len(events) && i < hpaEvents; i++ {
			a.Events = append(a.Events, record(events[i]))
		}
	}
	pods, podsErr := e.targetPods(ctx, h)
	for i, m := range h.Spec.Metrics {
		cur := "unknown"
		if i < len(h.Status.CurrentMetrics) {
			cur = currentValue(h.Status.CurrentMetrics[i])
		}
		hm := HPAMetric{Name: metricName(m), Current: cur, Target: targetValue(m), API: metricAPI(m)}
		e.findRule(ctx, h, m, pods, podsErr, &hm)
		a.Metrics = append(a.Metrics, hm)
	}
	e.replay(ctx, h, a)
	r := Report{Kind: KindHPA, Object: "hpa " + key, HPA: a}
	e.hpaText(&r, a)
	return r, nil
}

func (e *Explainer) hpaText(r *Report, a *HPAAnswer) {
	desired := strconv.Itoa(int(a.DesiredReplicas))
	if a.DesiredReplicas == 0 && a.CurrentReplicas > 0 {
		desired = "not computed"
	}
	r.Verdict = fmt.Sprintf("%d replica(s), desired %s (min %d, max %d)", a.CurrentReplicas, desired, a.MinReplicas, a.MaxReplicas)
	for _, c := range a.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status == v1.ConditionFalse {
			r.Verdict += "; not scaling: " + c.Reason
		}
	}
	r.add("target: %s", a.ScaleTarget)
	if a.LastScaleTime != nil {
		r.add("last scaled %s", e.ago(*a.LastScaleTime))
	}
	for _, m := range a.Metrics {
		r.add("metric %s: current %s, target %s", m.Name, m.Current, m.Target)
		switch {
		case m.Rule != nil:
			r.add("  from %s, adapter rule %s of %s (seriesQuery %s, series %s)", m.API, m.Rule.Rule, m.Rule.Source, m.Rule.SeriesQuery, m.Rule.Series)
			r.add("  PromQL: %s", m.Rule.Query)
		case m.RuleError != "":
			r.add("  from %s; the adapter rule cannot be found: %s", m.API, m.RuleError)
		default:
			r.add("  from %s", m.API)
		}
	}
	for _, c := range a.Conditions {
		r.add("condition %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, ev := range a.Events {
		r.add("event %s (%s): %s", ev.Reason, e.ago(ev.Time), ev.Message)
	}
	for _, u := range a.Unserved {
		for _, p := range u.Pods {
			r.add("metric pods %s: pod %s has no sample: %s", u.Metric, p.Pod, p.Error)
		}
		if u.NotAsked > 0 {
			r.add("metric pods %s: %d more pod(s) without a sample not asked about", u.Metric, u.NotAsked)
		}
	}
	if a.Model == nil {
		r.add("model: %s", a.ModelError)
		return
	}
	r.add("model (the controller's arithmetic on the metrics read now):")
	for _, m := range a.Model.Metrics {
		for _, n := range m.Notes {
			r.add("  %s: %s", m.Name, n)
		}
	}
	for _, line := range a.Model.Explanation {
		r.add("  %s", line)
	}
	r.add("  (the model starts without the controller's history of recommendations and scale events, so it holds a scale-down for the stabilization window as the controller does for a new HPA)")
}

// replay runs the controller's arithmetic on the metrics read now.
func (e *Explainer) replay(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, a *HPAAnswer) {
	model, err := hpa.New(h.Spec, e.hpaOptions())
	if err != nil {
		a.ModelError = fmt.Sprintf("the spec is not valid: %v", err)
		return
	}
	in, err := e.modelInput(ctx, h, model.Spec())
	if err != nil {
		a.ModelError = fmt.Sprintf("cannot read the target: %v", err)
		return
	}
	e.unservedPods(ctx, h.Namespace, model.Spec(), in, a)
	d, err := model.Step(in)
	if err != nil {
		a.ModelError = err.Error()
		return
	}
	m := &HPAModel{CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas, Rescale: d.Rescale, Reason: d.Reason,
		Explanation: d.Explanation}
	for _, r := range d.Metrics {
		mm := ModelMetric{Name: r.Name, Proposal: r.Proposal, Ratio: r.Ratio, Notes: r.Notes}
		if r.Err != nil {
			mm.Error = r.Err.Error()
		}
		m.Metrics = append(m.Metrics, mm)
	}
	a.Model = m
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
	in := hpa.Input{Now: e.o.Clock.Now(), Replicas: specR, StatusReplicas: statusR, ScaledToZero: scaledToZero(h)}
	for i := range pl.Items {
		in.Pods = append(in.Pods, &pl.Items[i])
	}
	for _, m := range spec.Metrics {
		in.Metrics = append(in.Metrics, e.read(ctx, ns, sel, m))
	}
	return in, nil
}

// hpaOptions are the model's options for the cluster's controller: before
// Kubernetes 1.37 it knows no ScaledToZero condition and reads the metrics
// of every target at 0 whose minReplicas is 0. A server version that
// cannot be read or parsed keeps the options as configured.
func (e *Explainer) hpaOptions() hpa.Options {
	o := e.o.HPA
	v, err := e.o.Client.Discovery().ServerVersion()
	if err != nil {
		return o
	}
	major, err1 := strconv.Atoi(strings.TrimSuffix(v.Major, "+"))
	minor, err2 := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err1 == nil && err2 == nil && major == 1 && minor < 37 {
		o.ScaledToZeroCondition = false
	}
	return o
}

// scaledToZero is the HPA's ScaledToZero condition (Kubernetes 1.37 and
// later): whether the controller itself put the target at 0, which decides
// whether it reads the metrics of a target at 0.
func scaledToZero(h *autoscalingv2.HorizontalPodAutoscaler) *bool {
	held := false
	for _, c := range h.Status.Conditions {
		if c.Type == hpa.ScaledToZero {
			held = c.Status == v1.ConditionTrue
		}
	}
	return &held
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
