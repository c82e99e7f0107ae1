// Package parity checks pkg/hpa against the HPA controller's own replica
// calculator (k8s.io/kubernetes v1.37.2, pkg/controller/podautoscaler) on
// random pods, samples, targets and tolerances: every metric source and
// target type, missing samples, pending, failed, terminating, unready and
// initializing pods, samples of pods the selector does not select. It is its
// own module so the main module never depends on k8s.io/kubernetes.
//
//	cd test/hpaparity && go test .
package parity

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
	"unsafe"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	pa "k8s.io/kubernetes/pkg/controller/podautoscaler"
	mc "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// fakeMetrics serves fixed readings to the upstream calculator.
type fakeMetrics struct {
	pods  mc.PodMetricsInfo
	value int64
}

func (f fakeMetrics) copy() mc.PodMetricsInfo {
	out := mc.PodMetricsInfo{}
	for k, v := range f.pods {
		out[k] = v
	}
	return out
}
func (f fakeMetrics) GetResourceMetric(context.Context, v1.ResourceName, string, labels.Selector, string) (mc.PodMetricsInfo, time.Time, error) {
	return f.copy(), time.Time{}, nil
}
func (f fakeMetrics) GetRawMetric(string, string, labels.Selector, labels.Selector) (mc.PodMetricsInfo, time.Time, error) {
	return f.copy(), time.Time{}, nil
}
func (f fakeMetrics) GetObjectMetric(string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return f.value, time.Time{}, nil
}
func (f fakeMetrics) GetExternalMetric(string, string, labels.Selector) ([]int64, time.Time, error) {
	return []int64{f.value}, time.Time{}, nil
}

// tolerances builds the upstream Tolerances, whose fields are unexported.
func tolerances(down, up float64) pa.Tolerances {
	var t pa.Tolerances
	v := reflect.ValueOf(&t).Elem()
	set := func(name string, x float64) {
		f := v.FieldByName(name)
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetFloat(x)
	}
	set("scaleDown", down)
	set("scaleUp", up)
	return t
}

// TestReplicaCalculatorParity compares one metric's proposal (or failure)
// on 20,000 random cases. Pod times are whole seconds before a truncated
// now, so the calculator's own time.Now() and the model's Now fall on the
// same side of every threshold.
func TestReplicaCalculatorParity(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	mismatches := 0
	const cases = 20000
	for i := 0; i < cases; i++ {
		now := time.Now().Truncate(time.Second)
		n := 1 + r.Intn(6)
		var pods []*v1.Pod
		samples := mc.PodMetricsInfo{}
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for j := 0; j < n; j++ {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", j), Namespace: "default", Labels: map[string]string{"app": "x"}}}
			req := resource.NewMilliQuantity(int64(100+r.Intn(1900)), resource.DecimalSI)
			p.Spec.Containers = []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: *req, "nvidia.com/gpu": resource.MustParse("1")}}}}
			if r.Intn(5) == 0 { // a sidecar (counts) or a plain init container (does not)
				init := v1.Container{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: *resource.NewMilliQuantity(int64(50+r.Intn(500)), resource.DecimalSI), "nvidia.com/gpu": resource.MustParse("0")}}}
				if r.Intn(2) == 0 {
					always := v1.ContainerRestartPolicyAlways
					init.RestartPolicy = &always
				}
				p.Spec.InitContainers = []v1.Container{init}
			}
			switch x := r.Intn(100); {
			case x < 7:
				p.Status.Phase = v1.PodPending
			case x < 12:
				p.Status.Phase = v1.PodFailed
			default:
				p.Status.Phase = v1.PodRunning
			}
			if r.Intn(20) == 0 {
				ts := metav1.NewTime(now)
				p.DeletionTimestamp = &ts
			}
			if r.Intn(20) != 0 {
				st := metav1.NewTime(now.Add(-time.Duration(r.Intn(600)) * time.Second))
				p.Status.StartTime = &st
				if r.Intn(10) != 0 {
					status := v1.ConditionTrue
					if r.Intn(4) == 0 {
						status = v1.ConditionFalse
					}
					p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: status,
						LastTransitionTime: metav1.NewTime(st.Add(time.Duration(r.Intn(90)) * time.Second))}}
				}
			}
			if p.Status.Phase != v1.PodPending && r.Intn(100) < 85 {
				samples[p.Name] = mc.PodMetric{Value: int64(r.Intn(3 * int(req.MilliValue()+1))),
					Timestamp: now.Add(-time.Duration(r.Intn(60)) * time.Second), Window: time.Duration(30+30*r.Intn(2)) * time.Second}
			}
			pods = append(pods, p)
			if err := idx.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		if r.Intn(10) == 0 {
			samples["stranger"] = mc.PodMetric{Value: 500, Timestamp: now, Window: time.Minute}
		}
		fm := fakeMetrics{pods: samples, value: int64(r.Intn(5000000))}
		rc := pa.NewReplicaCalculator(fm, corelisters.NewPodLister(idx), 5*time.Minute, 30*time.Second)
		down, up := []float64{0.1, 0, 0.05, 0.3}[r.Intn(4)], []float64{0.1, 0, 0.05, 0.3}[r.Intn(4)]
		tol := tolerances(down, up)
		cur := int32(1 + r.Intn(8))
		statusR := int32(n)
		sel := labels.SelectorFromSet(labels.Set{"app": "x"})
		targetUtil := int32(10 + r.Intn(140))
		targetMilli := int64(1 + r.Intn(2000000))
		kind := r.Intn(7)

		var want int32
		var werr error
		var ms autoscalingv2.MetricSpec
		q := resource.NewMilliQuantity(targetMilli, resource.DecimalSI)
		ref := autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "s", APIVersion: "v1"}
		switch kind {
		case 0, 1:
			res := v1.ResourceCPU
			if kind == 1 {
				res = "nvidia.com/gpu"
			}
			want, _, _, _, werr = rc.GetResourceReplicas(context.Background(), cur, targetUtil, res, tol, "default", sel, "")
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: res,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &targetUtil}}}
		case 2:
			want, _, _, werr = rc.GetRawResourceReplicas(context.Background(), cur, targetMilli, v1.ResourceCPU, tol, "default", sel, "")
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: v1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q}}}
		case 3:
			want, _, _, werr = rc.GetMetricReplicas(cur, targetMilli, "m", tol, "default", sel, labels.Everything())
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "m"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q}}}
		case 4:
			want, _, _, werr = rc.GetObjectMetricReplicas(cur, targetMilli, "m", tol, "default", &ref, sel, labels.Everything())
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: ref, Metric: autoscalingv2.MetricIdentifier{Name: "m"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q}}}
		case 5:
			want, _, _, werr = rc.GetObjectPerPodMetricReplicas(statusR, targetMilli, "m", tol, "default", &ref, labels.Everything())
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: ref, Metric: autoscalingv2.MetricIdentifier{Name: "m"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q}}}
		case 6:
			want, _, _, werr = rc.GetExternalMetricReplicas(cur, targetMilli, "m", tol, "default", nil, sel)
			ms = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "m"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q}}}
		}
		minR := int32(1)
		spec := autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 1000, Metrics: []autoscalingv2.MetricSpec{ms},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: resource.NewMilliQuantity(int64(up*1000), resource.DecimalSI)},
				ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: resource.NewMilliQuantity(int64(down*1000), resource.DecimalSI)}}}
		m, err := hpa.New(spec, hpa.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		reading := hpa.Reading{Pods: map[string]hpa.PodMetric{}, Value: fm.value}
		for k, v := range samples {
			reading.Pods[k] = hpa.PodMetric{Value: v.Value, Timestamp: v.Timestamp, Window: v.Window}
		}
		d, err := m.Step(hpa.Input{Now: time.Now(), Replicas: cur, StatusReplicas: statusR, Pods: pods, Metrics: []hpa.Reading{reading}})
		if err != nil {
			t.Fatal(err)
		}
		got, gerr := d.Metrics[0].Proposal, d.Metrics[0].Err
		if (werr != nil) != (gerr != nil) || (werr == nil && got != want) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("case %d kind %d: upstream %d (%v), model %d (%v); notes %q", i, kind, want, werr, got, gerr, d.Metrics[0].Notes)
			}
		}
	}
	t.Logf("%d cases, %d mismatches", cases, mismatches)
}
