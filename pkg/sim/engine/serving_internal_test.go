package engine

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// servingWorkload is a serving Deployment whose HPA reads metric, with
// requests given as seconds of prefill on the calibrated H100 / 8B replica.
func servingWorkload(t *testing.T, metric string, reqs ...scenario.ServingRequest) *workloadState {
	t.Helper()
	sv := &scenario.Serving{GPU: "H100", Model: "8B", Requests: reqs}
	s, err := newServingState(sv)
	if err != nil {
		t.Fatal(err)
	}
	d := &scenario.Deployment{Serving: sv, HPA: &autoscalingv2.HorizontalPodAutoscalerSpec{
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: metric}}}}}}
	return &workloadState{cfg: &scenario.Workload{Name: "llm", Deployment: d}, serving: s}
}

func prompt(at time.Duration, seconds float64) scenario.ServingRequest {
	return scenario.ServingRequest{At: metav1.Duration{Duration: at}, Input: int64(seconds * 30791.5), Output: 1}
}

// GPU utilization is the busy share of the time since the last sync: a
// 15 s prefill in a 30 s period is 50%, an idle period after it 0%.
func TestServingGPUUtilization(t *testing.T) {
	w := servingWorkload(t, scenario.GPUUtilizationMetric, prompt(0, 5), prompt(5, 5), prompt(10, 5))
	if err := w.servingBound(&simPod{pi: &snapshot.PodInfo{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p0"}}}}, 0); err != nil {
		t.Fatal(err)
	}
	metric := map[string]hpa.PodMetric{"p0": {}}
	w.servingMetrics(30*time.Second, metric)
	if got := metric["p0"].Value; got < 49_990 || got > 50_010 {
		t.Errorf("after 15 s busy of 30: %d milli-percent, want 50000", got)
	}
	w.servingMetrics(60*time.Second, metric)
	if got := metric["p0"].Value; got != 0 {
		t.Errorf("after 30 s idle: %d milli-percent, want 0", got)
	}
}

// Queue depth is a pod's requests without a first token.
func TestServingQueueDepth(t *testing.T) {
	w := servingWorkload(t, scenario.QueueDepthMetric, prompt(0, 5), prompt(0, 5), prompt(0, 5))
	if err := w.servingBound(&simPod{pi: &snapshot.PodInfo{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p0"}}}}, 0); err != nil {
		t.Fatal(err)
	}
	metric := map[string]hpa.PodMetric{"p0": {}}
	w.servingMetrics(7*time.Second, metric)
	// The first had its first token at 5 s; the second is being
	// prefilled, the third waits behind it.
	if got := metric["p0"].Value; got != 2000 {
		t.Errorf("queue depth %d milli-requests, want 2000", got)
	}
}
