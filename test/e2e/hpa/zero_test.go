package hpa

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/inferencesim"
)

// TestScaleToZeroOnVLLMQueue: a vLLM Deployment whose HPA (minReplicas 0)
// reads the External metrics of the vLLM example rules, served by the
// stand-in inference server through Prometheus and the adapter. Idle, the
// HPA takes it 1 -> 0 after its 10 s scale-down window (ScaledToZero);
// 10 requests arrive and wait at the router: 0 -> 3 (ceil(10 / 4)); once
// served they run on the 3 servers, which holds 3; the load stops: back to
// 0. The local control plane runs Kubernetes 1.35 with the HPAScaleToZero
// gate on, whose controller reads the metrics of any target at 0 with
// minReplicas 0 (from 1.37 only of one it scaled to 0 itself, as here).
func TestScaleToZeroOnVLLMQueue(t *testing.T) {
	var sim *inferencesim.Simulator
	e := newEnv(t, envOptions{GPUNodes: 1, GPUsPerNode: 4, ScrapeInterval: scrapeInterval,
		Scrape: func(t testing.TB, e *env) []localcluster.ScrapeJob {
			var err error
			sim, err = inferencesim.New(inferencesim.Options{Client: e.c.Client, SlotsPerPod: 4})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			return []localcluster.ScrapeJob{{Name: "inference-sim", Targets: []string{ln.Addr().String()}, HonorLabels: true}}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	e.startAdapter(t, "../../../examples/metrics-adapter/vllm-values.yaml")

	const ns, name, model = "default", "llama", "llama-3-8b"
	dep, h := vllmObjects(ns, name, model)
	createDeployment(ctx, t, e, dep)
	runningPods(ctx, t, e, ns, name, 1, time.Minute)
	createHPA(ctx, t, e, h)

	t.Run("1-IdleGoesToZero", func(t *testing.T) {
		waitScale(ctx, t, e, ns, name, 0, 2*time.Minute)
		runningPods(ctx, t, e, ns, name, 0, time.Minute)
	})
	t.Run("2-RequestsLiftItFromZero", func(t *testing.T) {
		if err := sim.SetLoad(inferencesim.Model{Namespace: ns, Name: model}, 10); err != nil {
			t.Fatal(err)
		}
		waitScale(ctx, t, e, ns, name, 3, 2*time.Minute)
		runningPods(ctx, t, e, ns, name, 3, time.Minute)
		// Served, the requests run on the servers: the running metric
		// keeps 3 past the scale-down window.
		time.Sleep(30 * time.Second)
		if n := scaleOf(ctx, t, e, ns, name); n != 3 {
			t.Fatalf("with 10 requests running: %d replicas, want 3", n)
		}
	})
	t.Run("3-LoadStopsBackToZero", func(t *testing.T) {
		if err := sim.SetLoad(inferencesim.Model{Namespace: ns, Name: model}, 0); err != nil {
			t.Fatal(err)
		}
		waitScale(ctx, t, e, ns, name, 0, 2*time.Minute)
		runningPods(ctx, t, e, ns, name, 0, time.Minute)
	})
}

// vllmObjects is a GPU Deployment of one model's vLLM servers and its HPA:
// minReplicas 0, about 4 requests waiting and 4 running per server, a
// 10-second scale-down window.
func vllmObjects(ns, name, model string) (*appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler) {
	one, zero, window := int32(1), int32(0), int32(10)
	lbls := map[string]string{"app": name, inferencesim.DefaultModelLabel: model}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:latest",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
				Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			}}}}
	four := resource.MustParse("4")
	ext := func(metric string) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: metric, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"model_name": model}}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &four}}}
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    &zero, MaxReplicas: 4,
			Metrics:  []autoscalingv2.MetricSpec{ext("vllm_requests_waiting"), ext("vllm_requests_running")},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window}},
		}}
	return dep, h
}

func scaleOf(ctx context.Context, t testing.TB, e *env, ns, name string) int32 {
	t.Helper()
	d, err := e.c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// waitScale waits for the Deployment's spec.replicas to be n.
func waitScale(ctx context.Context, t testing.TB, e *env, ns, name string, n int32, timeout time.Duration) {
	t.Helper()
	var last int32 = -1
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		d, err := e.c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = *d.Spec.Replicas
		return last == n, nil
	})
	if err != nil {
		_, h, _ := getHPA(ctx, e, ns, name)
		var conds []string
		if h != nil {
			for _, c := range h.Status.Conditions {
				conds = append(conds, string(c.Type)+"="+string(c.Status)+" ("+c.Reason+": "+c.Message+")")
			}
		}
		t.Fatalf("deployment %s/%s: want %d replicas: %v (last %d); HPA conditions %v", ns, name, n, err, last, conds)
	}
}
