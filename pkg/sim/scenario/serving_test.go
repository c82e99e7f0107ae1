package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const servingScenario = `
name: s
duration: 10m
nodeGroups:
- name: h100
  maxSize: 3
  pricePerHour: 4
  capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
workloads:
- name: llm
  pod: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
  deployment:
    replicas: 1
    readyAfter: 30s
    serving:
      gpu: H100
      model: 8B
      requests: [{at: 0s, input: 100, output: 10}, {at: 1s, input: 200, output: 20}]
    hpa:
      maxReplicas: 3
      metrics: [{type: Pods, pods: {metric: {name: queue_depth}, target: {type: AverageValue, averageValue: "4"}}}]
    policies:
      gpu-utilization:
        maxReplicas: 3
        metrics: [{type: Pods, pods: {metric: {name: gpu_utilization}, target: {type: AverageValue, averageValue: "60"}}}]
`

func TestServingScenarioParses(t *testing.T) {
	s, err := Parse([]byte(servingScenario))
	if err != nil {
		t.Fatal(err)
	}
	sv := s.Workloads[0].Deployment.Serving
	if sv.SLO.Duration != DefaultServingSLO {
		t.Errorf("slo %s, want the default %s", sv.SLO.Duration, DefaultServingSLO)
	}
	reqs := sv.ServingRequests()
	if len(reqs) != 2 || reqs[1].At != 1 || reqs[1].InputTokens != 200 || reqs[1].OutputTokens != 20 {
		t.Errorf("requests %+v", reqs)
	}
	if back := RequestsFrom(reqs); back[1] != sv.Requests[1] {
		t.Errorf("round trip %+v, want %+v", back[1], sv.Requests[1])
	}
	// A burst adds a request every 20s from 0s to 1m, the first at 0s,
	// merged with the listed ones by arrival.
	sv.Bursts = []ServingBurst{{At: metav1.Duration{}, For: metav1.Duration{Duration: time.Minute}, Every: metav1.Duration{Duration: 20 * time.Second}, Input: 5, Output: 1}}
	var at []float64
	for _, r := range sv.ServingRequests() {
		at = append(at, r.At)
	}
	if want := []float64{0, 0, 1, 20, 40, 60}; !slices.Equal(at, want) {
		t.Errorf("with a burst: arrivals %v, want %v", at, want)
	}
	sv.Bursts = nil
	sv.StartAt.Duration = 90 * time.Second
	if reqs := sv.ServingRequests(); reqs[0].At != 90 || reqs[1].At != 91 {
		t.Errorf("with startAt 90s: arrivals %g and %g, want 90 and 91", reqs[0].At, reqs[1].At)
	}
}

// Every mistake in a serving Deployment names its field and value.
func TestServingScenarioNamesTheField(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"model: 8B", "model: 8B\n      startAt: -1s", "workloads[0].deployment.serving.startAt: must not be negative, got -1s"},
		{`nvidia.com/gpu: "1"}}`, `nvidia.com/gpu: "2"}}`, "workloads[0].pod.requests: a replica of 8B on H100 takes 1 GPU(s), the pod asks for 2"},
		{"model: 8B", "model: 9B", `workloads[0].deployment.serving.model: serving model "9B": not calibrated`},
		{"{at: 1s, input: 200", "{at: -1s, input: 200", "workloads[0].deployment.serving.requests[1].at: must not be negative, got -1s"},
		{"{at: 0s, input: 100", "{at: 5s, input: 100", "workloads[0].deployment.serving.requests[1].at: must not go back in time, got 1s after 5s"},
		{"output: 20}", "output: -20}", "workloads[0].deployment.serving.requests[1]: token counts must not be negative, got input 200, output -20"},
		{"name: queue_depth", "name: vllm_waiting", `workloads[0].deployment.hpa.metrics[0].pods.metric.name: a serving pod reports queue_depth or gpu_utilization, got "vllm_waiting"`},
		{"name: gpu_utilization", "name: duty", `workloads[0].deployment.policies.gpu-utilization.metrics[0].pods.metric.name: a serving pod reports`},
		{"requests: [{at: 0s", "bursts: [{at: 0s, for: 1m, every: 0s, input: 1, output: 1}]\n      requests: [{at: 0s", "workloads[0].deployment.serving.bursts[0].every: must be positive, got 0s"},
		{"requests: [{at: 0s", "bursts: [{at: 0s, for: -1m, every: 1s, input: 1, output: 1}]\n      requests: [{at: 0s", "workloads[0].deployment.serving.bursts[0].for: must not be negative, got -1m0s"},
		{"requests: [{at: 0s", "bursts: [{at: 0s, for: 1m, every: 1s, input: -1, output: 1}]\n      requests: [{at: 0s", "workloads[0].deployment.serving.bursts[0]: token counts must not be negative, got input -1, output 1"},
		{"metrics: [{type: Pods, pods: {metric: {name: queue_depth}, target: {type: AverageValue, averageValue: \"4\"}}}]",
			"metrics: [{type: External, external: {metric: {name: vllm_waiting}, target: {type: AverageValue, averageValue: \"4\"}}}]",
			`workloads[0].deployment.hpa.metrics[0].external.metric.name: a serving Deployment's External metric is requests_in_flight, got "vllm_waiting"`},
		{"    serving:\n", "    load: {capacityPerPod: 1, points: [{at: 0s, value: 1}]}\n    serving:\n", "workloads[0].deployment.serving.load: a serving Deployment's load is its requests, not a curve"},
	} {
		in := strings.Replace(servingScenario, c.from, c.to, 1)
		if in == servingScenario {
			t.Fatalf("%q not in the scenario", c.from)
		}
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// A policy replaces the HPA of the Deployments that name it, in a copy.
func TestWithPolicy(t *testing.T) {
	s, err := Parse([]byte(servingScenario))
	if err != nil {
		t.Fatal(err)
	}
	alt, err := s.WithPolicy("gpu-utilization")
	if err != nil {
		t.Fatal(err)
	}
	if got := alt.Workloads[0].Deployment.HPA.Metrics[0].Pods.Metric.Name; got != GPUUtilizationMetric {
		t.Errorf("the policy's HPA reads %q, want %q", got, GPUUtilizationMetric)
	}
	if got := s.Workloads[0].Deployment.HPA.Metrics[0].Pods.Metric.Name; got != QueueDepthMetric {
		t.Errorf("the original now reads %q: it must be left as it is", got)
	}
	if _, err := s.WithPolicy("warm"); err == nil || !strings.Contains(err.Error(), `policy "warm": no Deployment of scenario s has it (policies: gpu-utilization)`) {
		t.Errorf("an unknown policy: %v", err)
	}
}
