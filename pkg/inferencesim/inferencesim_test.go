package inferencesim

import (
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func server(name, model string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: map[string]string{DefaultModelLabel: model}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func scrape(t *testing.T, s *Simulator) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("missing %q in\n%s", l, body)
		}
	}
}

// 20 requests on two Ready servers with 8 slots each: 8 running and 2
// waiting on each, KV cache full; the unready server and the other model's
// server report nothing of this model; the router holds nothing.
func TestLoadSpreadsOverReadyServers(t *testing.T) {
	client := fake.NewClientset(server("llama-b", "llama", true), server("llama-a", "llama", true),
		server("llama-c", "llama", false), server("qwen-a", "qwen", true))
	s, err := New(Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoad(Model{"llm", "llama"}, 21); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, s)
	wantLines(t, body,
		`vllm:num_requests_running{model_name="llama",namespace="llm",pod="llama-a"} 8`,
		`vllm:num_requests_running{model_name="llama",namespace="llm",pod="llama-b"} 8`,
		`vllm:num_requests_waiting{model_name="llama",namespace="llm",pod="llama-a"} 3`,
		`vllm:num_requests_waiting{model_name="llama",namespace="llm",pod="llama-b"} 2`,
		`vllm:num_requests_waiting{model_name="llama",namespace="llm"} 0`,
		`vllm:kv_cache_usage_perc{model_name="llama",namespace="llm",pod="llama-a"} 1`,
		`vllm:num_requests_running{model_name="qwen",namespace="llm",pod="qwen-a"} 0`,
	)
	if strings.Contains(body, "llama-c") {
		t.Errorf("an unready server reports:\n%s", body)
	}
}

// With no server the requests wait at the router; the per-model total is
// the same either way.
func TestLoadWaitsAtTheRouterWithoutServers(t *testing.T) {
	s, err := New(Options{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoad(Model{"llm", "llama"}, 12); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, s), `vllm:num_requests_waiting{model_name="llama",namespace="llm"} 12`)
	if err := s.SetLoad(Model{"llm", "llama"}, -1); err == nil || !strings.Contains(err.Error(), "requests for model llm/llama: must not be negative, got -1") {
		t.Errorf("negative load: %v", err)
	}
	if _, err := New(Options{Client: fake.NewClientset(), SlotsPerPod: -2}); err == nil || !strings.Contains(err.Error(), "slots per pod: must be positive, got -2") {
		t.Errorf("negative slots: %v", err)
	}
}

func TestControlSetsLoads(t *testing.T) {
	s, err := New(Options{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	h := s.ControlHandler()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec
	}
	if rec := do("PUT", "/load/llm/llama", `{"requests": 7}`); rec.Code != 204 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/load/llm/llama", ""); rec.Body.String() != "{\"requests\":7}\n" {
		t.Fatalf("GET: %s", rec.Body)
	}
	wantLines(t, scrape(t, s), `vllm:num_requests_waiting{model_name="llama",namespace="llm"} 7`)
	for body, want := range map[string]string{
		`{"requests": -3}`: "requests for model llm/llama: must not be negative, got -3",
		`{}`:               "load for model llm/llama: requests: required",
		`{"reqs": 1}`:      `load for model llm/llama: body: json: unknown field "reqs"`,
	} {
		if rec := do("PUT", "/load/llm/llama", body); rec.Code != 400 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("PUT %s: %d %q, want 400 with %q", body, rec.Code, rec.Body, want)
		}
	}
}
