package hpa

import (
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// t0 is the test epoch; pods start an hour before it.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// podBuilder makes a selected pod: Running, Ready for an hour, requesting
// 1 CPU and 1 GPU unless changed.
type podBuilder struct{ p *v1.Pod }

func pod(name string) *podBuilder {
	start := metav1.NewTime(t0.Add(-time.Hour))
	return &podBuilder{&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(10 * time.Second))}}},
	}}
}

// neverReady: unready since seconds after start (the controller's "never
// been ready").
func (b *podBuilder) neverReady() *podBuilder {
	b.p.Status.Conditions[0].Status = v1.ConditionFalse
	b.p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(b.p.Status.StartTime.Add(time.Second))
	return b
}

func (b *podBuilder) pending() *podBuilder {
	b.p.Status.Phase = v1.PodPending
	b.p.Status.StartTime = nil
	b.p.Status.Conditions = nil
	return b
}

func (b *podBuilder) failed() *podBuilder { b.p.Status.Phase = v1.PodFailed; return b }

func (b *podBuilder) cpu(q string) *podBuilder {
	b.p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(q)
	return b
}

// sidecar adds a restartable init container requesting cpu.
func (b *podBuilder) sidecar(cpu string) *podBuilder {
	always := v1.ContainerRestartPolicyAlways
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, v1.Container{Name: "sidecar", RestartPolicy: &always,
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}})
	return b
}

func (b *podBuilder) build() *v1.Pod { return b.p }

// pods makes n ready pods p0..p(n-1).
func pods(n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("p%d", i)).build()
	}
	return out
}

// samples maps pods p0.. to the given milli values.
func samples(values ...int64) map[string]PodMetric {
	out := map[string]PodMetric{}
	for i, v := range values {
		out[fmt.Sprintf("p%d", i)] = PodMetric{Value: v, Timestamp: t0, Window: time.Minute}
	}
	return out
}

func cpuUtilization(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}
}

func gpuUtilization(target int32) autoscalingv2.MetricSpec {
	m := cpuUtilization(target)
	m.Resource.Name = "nvidia.com/gpu"
	return m
}

func podsMetric(name, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

func objectMetric(name string, targetType autoscalingv2.MetricTargetType, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	t := autoscalingv2.MetricTarget{Type: targetType}
	if targetType == autoscalingv2.ValueMetricType {
		t.Value = &q
	} else {
		t.AverageValue = &q
	}
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "web", APIVersion: "v1"},
		Metric:          autoscalingv2.MetricIdentifier{Name: name}, Target: t}}
}

func externalMetric(name string, targetType autoscalingv2.MetricTargetType, target string) autoscalingv2.MetricSpec {
	o := objectMetric(name, targetType, target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: o.Object.Metric, Target: o.Object.Target}}
}

func spec(minR, maxR int32, metrics ...autoscalingv2.MetricSpec) autoscalingv2.HorizontalPodAutoscalerSpec {
	return autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
		MinReplicas:    &minR, MaxReplicas: maxR, Metrics: metrics,
	}
}

func newModel(t *testing.T, s autoscalingv2.HorizontalPodAutoscalerSpec) *Model {
	t.Helper()
	m, err := New(s, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func step(t *testing.T, m *Model, in Input) Decision {
	t.Helper()
	if in.Now.IsZero() {
		in.Now = t0
	}
	if in.StatusReplicas == 0 {
		in.StatusReplicas = in.Replicas
	}
	d, err := m.Step(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantCondition(t *testing.T, d Decision, ct autoscalingv2.HorizontalPodAutoscalerConditionType, status v1.ConditionStatus, reason string) {
	t.Helper()
	c, ok := d.Condition(ct)
	if !ok {
		t.Fatalf("condition %s not set; conditions %+v", ct, d.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s = %s/%s (%s), want %s/%s\nexplanation: %q", ct, c.Status, c.Reason, c.Message, status, reason, d.Explanation)
	}
}

func int32p(v int32) *int32 { return &v }

func policyp(p autoscalingv2.ScalingPolicySelect) *autoscalingv2.ScalingPolicySelect { return &p }
