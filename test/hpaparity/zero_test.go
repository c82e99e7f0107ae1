package parity

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	pa "k8s.io/kubernetes/pkg/controller/podautoscaler"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// zeroCase is one sync of an HPA whose target may be at 0 replicas.
type zeroCase struct {
	cur, minR, maxR int32
	scaledToZero    *bool // the HPA's ScaledToZero condition before the sync
	metrics         []autoscalingv2.MetricSpec
	value           int64 // every Object and External metric reads this (milli)
	behavior        bool
}

func (c zeroCase) String() string {
	z := "absent"
	if c.scaledToZero != nil {
		z = fmt.Sprint(*c.scaledToZero)
	}
	var kinds []string
	for _, m := range c.metrics {
		t := ""
		switch m.Type {
		case autoscalingv2.ObjectMetricSourceType:
			t = string(m.Object.Target.Type)
		case autoscalingv2.ExternalMetricSourceType:
			t = string(m.External.Target.Type)
		}
		kinds = append(kinds, string(m.Type)+"/"+t)
	}
	return fmt.Sprintf("cur=%d min=%d max=%d ScaledToZero=%s metrics=%v value=%dm behavior=%v", c.cur, c.minR, c.maxR, z, kinds, c.value, c.behavior)
}

// upstreamSync runs the real HorizontalController on one HPA until it
// writes the HPA's status, and returns that status and the scale it set
// (-1 when it set none).
// The spec must come with the API server's defaults, which the fake
// clientset does not apply: the model's Spec() has them.
func upstreamSync(t *testing.T, c zeroCase, spec autoscalingv2.HorizontalPodAutoscalerSpec) (autoscalingv2.HorizontalPodAutoscalerStatus, int32) {
	t.Helper()
	ns := "default"
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: spec}
	if c.scaledToZero != nil {
		st := v1.ConditionFalse
		if *c.scaledToZero {
			st = v1.ConditionTrue
		}
		h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScaledToZero, Status: st, Reason: "seeded"}}
	}
	objs := []runtime.Object{h}
	for _, p := range zeroPods(c.cur) {
		objs = append(objs, p)
	}
	client := fake.NewSimpleClientset(objs...)
	statuses := make(chan autoscalingv2.HorizontalPodAutoscalerStatus, 8)
	client.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
		obj := a.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
		statuses <- *obj.Status.DeepCopy()
		return true, obj, nil
	})
	var mu sync.Mutex
	scaled := int32(-1)
	sc := &scalefake.FakeScaleClient{}
	sc.AddReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: c.cur}, Status: autoscalingv1.ScaleStatus{Replicas: c.cur, Selector: "app=x"}}, nil
	})
	sc.AddReactor("update", "deployments", func(a core.Action) (bool, runtime.Object, error) {
		obj := a.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
		mu.Lock()
		scaled = obj.Spec.Replicas
		mu.Unlock()
		return true, obj, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(client, 0)
	hc := pa.NewHorizontalController(ctx, client.CoreV1(), sc, client.AutoscalingV2(),
		testrestmapper.TestOnlyStaticRESTMapper(legacyscheme.Scheme), fakeMetrics{value: c.value},
		f.Autoscaling().V2().HorizontalPodAutoscalers(), f.Core().V1().Pods(),
		time.Hour, 5*time.Minute, 0.1, 5*time.Minute, 30*time.Second)
	f.Start(ctx.Done())
	go hc.Run(ctx, 1)
	select {
	case st := <-statuses:
		cancel()
		mu.Lock()
		defer mu.Unlock()
		return st, scaled
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the controller wrote no status", c)
	}
	return autoscalingv2.HorizontalPodAutoscalerStatus{}, -1
}

// zeroBehavior has no stabilization either way, so one sync decides.
func zeroBehavior(on bool) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if !on {
		return nil
	}
	var zero int32
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero},
	}
}

func zeroPods(n int32) []*v1.Pod {
	start := metav1.NewTime(time.Now().Add(-time.Hour))
	var out []*v1.Pod
	for i := int32(0); i < n; i++ {
		out = append(out, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", Labels: map[string]string{"app": "x"}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start,
				Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start}}},
		})
	}
	return out
}

// TestScaleToZeroParity compares the model with kube-controller-manager's
// HPA controller (HPAScaleToZero on, as by default since 1.37) on random
// syncs of HPAs with minReplicas 0 to 2, targets at 0 or more replicas, the
// ScaledToZero condition absent, False or True, and Object and External
// metrics of both target types: the replica count set and the
// ScalingActive, ScaledToZero and ScalingLimited conditions must match.
func TestScaleToZeroParity(t *testing.T) {
	r := rand.New(rand.NewSource(26))
	yes, no := true, false
	const cases = 300
	checked := 0
	for i := 0; i < cases; i++ {
		c := zeroCase{cur: []int32{0, 0, 0, 1, 2, 5}[r.Intn(6)], minR: int32(r.Intn(3)), behavior: r.Intn(2) == 0,
			scaledToZero: []*bool{nil, &no, &yes, &yes}[r.Intn(4)]}
		c.maxR = c.minR + 1 + int32(r.Intn(10))
		c.value = []int64{0, 0, 1, 999, 10000, 25000, 1000000}[r.Intn(7)] + int64(r.Intn(3))
		for n := 1 + r.Intn(2); n > 0; n-- {
			c.metrics = append(c.metrics, randomTotalMetric(r))
		}
		spec := autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    &c.minR, MaxReplicas: c.maxR, Metrics: c.metrics, Behavior: zeroBehavior(c.behavior)}
		// Without behavior the flag's 5-minute window holds a first sync's
		// scale-down in both; with it, the windows are 0 and one sync decides.
		m, err := hpa.New(spec, hpa.DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		st, scaled := upstreamSync(t, c, m.Spec())
		readings := make([]hpa.Reading, len(c.metrics))
		for j := range readings {
			readings[j] = hpa.Reading{Value: c.value}
		}
		d, err := m.Step(hpa.Input{Now: time.Now(), Replicas: c.cur, StatusReplicas: c.cur, Pods: zeroPods(c.cur), Metrics: readings, ScaledToZero: c.scaledToZero})
		if err != nil {
			t.Fatal(err)
		}
		wantScaled := int32(-1)
		if d.Rescale {
			wantScaled = d.DesiredReplicas
		}
		if scaled != wantScaled || st.DesiredReplicas != d.DesiredReplicas {
			t.Errorf("%s: upstream scaled to %d (desired %d), model %d (desired %d); model says %q", c, scaled, st.DesiredReplicas, wantScaled, d.DesiredReplicas, d.Explanation)
			continue
		}
		for _, ct := range []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.ScalingActive, autoscalingv2.ScaledToZero, autoscalingv2.ScalingLimited} {
			up := findCondition(st.Conditions, ct)
			got, ok := d.Condition(ct)
			if ct == autoscalingv2.ScaledToZero && !ok && up != nil && up.Reason == "seeded" {
				continue // untouched in this sync, as the model reports it
			}
			if (up == nil) != !ok || (up != nil && (up.Status != got.Status || up.Reason != got.Reason)) {
				t.Errorf("%s: condition %s upstream %s, model %s", c, ct, describe(up), describe(condPtr(got, ok)))
			}
		}
		checked++
	}
	t.Logf("%d syncs compared", checked)
}

func randomTotalMetric(r *rand.Rand) autoscalingv2.MetricSpec {
	q := resource.NewMilliQuantity(int64(1+r.Intn(20))*1000, resource.DecimalSI)
	tgt := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q}
	if r.Intn(2) == 0 {
		tgt = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q}
	}
	id := autoscalingv2.MetricIdentifier{Name: "queue"}
	if r.Intn(2) == 0 {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: tgt}}
	}
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "s", APIVersion: "v1"}, Metric: id, Target: tgt}}
}

func findCondition(cs []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func condPtr(c autoscalingv2.HorizontalPodAutoscalerCondition, ok bool) *autoscalingv2.HorizontalPodAutoscalerCondition {
	if !ok {
		return nil
	}
	return &c
}

func describe(c *autoscalingv2.HorizontalPodAutoscalerCondition) string {
	if c == nil {
		return "absent"
	}
	return string(c.Status) + "/" + c.Reason
}
