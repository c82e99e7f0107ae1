package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

// Serving makes a Deployment an LLM inference server: its Ready pods serve
// requests with the calibrated profile of Model on GPU (docs/inference.md).
// A replica starts serving ReadyAfter after it is bound (the model load),
// so the start-up of a replica on a new node is provisioningDelay (boot) +
// devicePluginDelay + readyAfter.
type Serving struct {
	// GPU and Model name a calibrated profile ("H100", "8B").
	GPU   string `json:"gpu"`
	Model string `json:"model"`
	// SLO is the objective on time to first token (default 2s).
	SLO metav1.Duration `json:"slo,omitempty"`
	// Requests arrive over the run; `gpuscale simulate --requests`
	// replaces them with a trace.
	Requests []ServingRequest `json:"requests,omitempty"`
	// Bursts add requests at a steady pace over a span, for load that
	// comes and goes without a trace; `--requests` replaces them too.
	Bursts []ServingBurst `json:"bursts,omitempty"`
	// StartAt delays every request by this much, so that the Deployment's
	// first replicas are serving when the trace begins (default 0: a cold
	// start).
	StartAt metav1.Duration `json:"startAt,omitempty"`
}

// ServingRequest is one request: its arrival and its token counts.
type ServingRequest struct {
	At     metav1.Duration `json:"at"`
	Input  int64           `json:"input"`
	Output int64           `json:"output"`
}

// ServingBurst is a span of requests, one every Every from At for For
// (the first at At), each of Input and Output tokens.
type ServingBurst struct {
	At     metav1.Duration `json:"at"`
	For    metav1.Duration `json:"for"`
	Every  metav1.Duration `json:"every"`
	Input  int64           `json:"input"`
	Output int64           `json:"output"`
}

// DefaultServingSLO is the time-to-first-token objective when none is set.
const DefaultServingSLO = 2 * time.Second

// The metrics a serving pod reports to its HPA, by the names of the
// servers that export them.
const (
	// QueueDepthMetric is the requests a pod holds without a first token
	// (vLLM's vllm:num_requests_waiting, plus the prompt being prefilled).
	QueueDepthMetric = "queue_depth"
	// GPUUtilizationMetric is the percent of the last sync period during
	// which the pod's GPU prefilled or decoded (DCGM's GPU utilization).
	GPUUtilizationMetric = "gpu_utilization"
	// InFlightMetric is the External metric of a serving Deployment: its
	// requests held at the router, waiting and running, summed over the
	// model (vLLM's waiting plus running requests, with the router's
	// queue). It reads the requests at 0 replicas too, so an HPA can scale
	// the model from zero on it, and does not fall as replicas take the
	// requests, so the replicas that serve them stay.
	InFlightMetric = "requests_in_flight"
)

// Profile is the calibrated replica profile.
func (s *Serving) Profile() (serving.Profile, error) { return serving.Lookup(s.GPU, s.Model) }

// ServingRequests are the requests and the bursts' requests as the
// serving model takes them, by arrival (a stable sort: the listed requests
// first at a tie).
func (s *Serving) ServingRequests() []serving.Request {
	out := make([]serving.Request, 0, len(s.Requests))
	for _, r := range s.Requests {
		out = append(out, serving.Request{At: (r.At.Duration + s.StartAt.Duration).Seconds(), InputTokens: r.Input, OutputTokens: r.Output})
	}
	for _, b := range s.Bursts {
		if b.Every.Duration <= 0 {
			continue // refused by validate
		}
		for at := b.At.Duration; at <= b.At.Duration+b.For.Duration; at += b.Every.Duration {
			out = append(out, serving.Request{At: (at + s.StartAt.Duration).Seconds(), InputTokens: b.Input, OutputTokens: b.Output})
		}
	}
	slices.SortStableFunc(out, func(a, b serving.Request) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return out
}

// RequestsFrom turns requests read from a trace into the scenario's form.
func RequestsFrom(reqs []serving.Request) []ServingRequest {
	out := make([]ServingRequest, len(reqs))
	for i, r := range reqs {
		out[i] = ServingRequest{At: metav1.Duration{Duration: time.Duration(r.At * float64(time.Second))}, Input: r.InputTokens, Output: r.OutputTokens}
	}
	return out
}

func (s *Serving) validate(path string, d *Deployment) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	if _, err := s.Profile(); err != nil {
		bad("model", "%v", err)
	}
	if s.StartAt.Duration < 0 {
		bad("startAt", "must not be negative, got %s", s.StartAt.Duration)
	}
	if s.SLO.Duration < 0 {
		bad("slo", "must not be negative, got %s", s.SLO.Duration)
	}
	if d.Load != nil {
		bad("load", "a serving Deployment's load is its requests, not a curve")
	}
	for i, b := range s.Bursts {
		f := fmt.Sprintf("bursts[%d]", i)
		switch {
		case b.At.Duration < 0:
			bad(f+".at", "must not be negative, got %s", b.At.Duration)
		case b.For.Duration < 0:
			bad(f+".for", "must not be negative, got %s", b.For.Duration)
		case b.Every.Duration <= 0:
			bad(f+".every", "must be positive, got %s", b.Every.Duration)
		case b.Input < 0 || b.Output < 0:
			bad(f, "token counts must not be negative, got input %d, output %d", b.Input, b.Output)
		}
	}
	for i, r := range s.Requests {
		switch {
		case r.At.Duration < 0:
			bad(fmt.Sprintf("requests[%d].at", i), "must not be negative, got %s", r.At.Duration)
		case i > 0 && r.At.Duration < s.Requests[i-1].At.Duration:
			bad(fmt.Sprintf("requests[%d].at", i), "must not go back in time, got %s after %s", r.At.Duration, s.Requests[i-1].At.Duration)
		}
		if r.Input < 0 || r.Output < 0 {
			bad(fmt.Sprintf("requests[%d]", i), "token counts must not be negative, got input %d, output %d", r.Input, r.Output)
		}
	}
	return errs
}

// validateGPUs checks that a serving pod asks for the GPUs one replica of
// its profile runs on: a 70B replica on four GPUs needs pods of four.
func (s *Serving) validateGPUs(path string, pod PodTemplate) []error {
	p, err := s.Profile()
	if err != nil {
		return nil // reported on serving.model
	}
	var gpus int64
	for name, q := range pod.Requests {
		if gpu.IsGPUResource(name) {
			gpus += q.Value()
		}
	}
	if gpus != int64(p.GPUs) {
		return []error{fmt.Errorf("%s.pod.requests: a replica of %s on %s takes %d GPU(s), the pod asks for %d", path, p.Model, p.GPU, p.GPUs, gpus)}
	}
	return nil
}

// servingMetrics checks that an HPA of a serving Deployment reads what its
// pods report.
func servingMetrics(path string, h *autoscalingv2.HorizontalPodAutoscalerSpec) []error {
	var errs []error
	if len(h.Metrics) > 1 {
		errs = append(errs, fmt.Errorf("%s.metrics: a serving Deployment's HPA reads one metric, got %d", path, len(h.Metrics)))
	}
	for i, m := range h.Metrics {
		if m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil &&
			m.Pods.Metric.Name != QueueDepthMetric && m.Pods.Metric.Name != GPUUtilizationMetric {
			errs = append(errs, fmt.Errorf("%s.metrics[%d].pods.metric.name: a serving pod reports %s or %s, got %q",
				path, i, QueueDepthMetric, GPUUtilizationMetric, m.Pods.Metric.Name))
		}
		if m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil && m.External.Metric.Name != InFlightMetric {
			errs = append(errs, fmt.Errorf("%s.metrics[%d].external.metric.name: a serving Deployment's External metric is %s, got %q",
				path, i, InFlightMetric, m.External.Metric.Name))
		}
	}
	return errs
}

// WithPolicy is the scenario with the HPA of every Deployment that names
// policy among its policies replaced by that spec; s is left as it is. A
// policy no Deployment names is refused with the names there are.
func (s *Scenario) WithPolicy(policy string) (*Scenario, error) {
	out := *s
	out.Workloads = append([]Workload(nil), s.Workloads...)
	found := false
	var names []string
	for i := range out.Workloads {
		d := out.Workloads[i].Deployment
		if d == nil {
			continue
		}
		for n := range d.Policies {
			names = append(names, n)
		}
		h, ok := d.Policies[policy]
		if !ok {
			continue
		}
		alt := *d
		alt.HPA = &h
		out.Workloads[i].Deployment = &alt
		found = true
	}
	if !found {
		slices.Sort(names)
		return nil, fmt.Errorf("policy %q: no Deployment of scenario %s has it (policies: %s)", policy, s.Name, strings.Join(slices.Compact(names), ", "))
	}
	return &out, nil
}
