package inferencesim

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }

// A server's time to first token is its prefill while it has free slots,
// and grows with the queue in front of it: 16 requests waiting on a full
// server of 8 slots whose requests take 10 s wait two rounds (20 s) more.
// Requests begin as slots free, running/10 a second.
func TestTimeToFirstTokenFollowsTheQueue(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)}
	s, err := New(Options{Client: fake.NewClientset(server("llama-a", "llama", true)), Now: clock.now,
		PrefillDuration: 100 * time.Millisecond, RequestDuration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	llama := Model{"llm", "llama"}
	const series = `vllm:time_to_first_token_seconds_bucket{model_name="llama",namespace="llm",pod="llama-a",le=`
	if err := s.SetLoad(llama, 8); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, s), series+`"+Inf"} 0`) // the server is first seen: nothing began yet

	clock.add(10 * time.Second) // 8 running for 10 s: 8 begin, none queued
	wantLines(t, scrape(t, s),
		"# TYPE vllm:time_to_first_token_seconds histogram",
		series+`"0.08"} 0`, series+`"0.1"} 8`, series+`"2560"} 8`, series+`"+Inf"} 8`,
		`vllm:time_to_first_token_seconds_count{model_name="llama",namespace="llm",pod="llama-a"} 8`)

	if err := s.SetLoad(llama, 24); err != nil { // 8 running, 16 queued
		t.Fatal(err)
	}
	clock.add(5 * time.Second) // 4 begin, each 0.1 + 16*10/8 = 20.1 s
	body := scrape(t, s)
	wantLines(t, body, series+`"0.1"} 8`, series+`"20"} 8`, series+`"40"} 12`, series+`"+Inf"} 12`,
		`vllm:time_to_first_token_seconds_sum{model_name="llama",namespace="llm",pod="llama-a"} 81.2`,
		`vllm:time_to_first_token_seconds_count{model_name="llama",namespace="llm",pod="llama-a"} 12`)

	clock.add(time.Second) // 0.8 of a request: none begins yet, the fraction is kept
	wantLines(t, scrape(t, s), series+`"+Inf"} 12`)
	clock.add(time.Second)
	wantLines(t, scrape(t, s), series+`"+Inf"} 13`)
}

// With no server there is no histogram: the router's queue has none, and
// a server gone starts from zero when it comes back.
func TestTimeToFirstTokenOnlyForReadyServers(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)}
	client := fake.NewClientset(server("llama-a", "llama", true))
	s, err := New(Options{Client: client, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoad(Model{"llm", "llama"}, 8); err != nil {
		t.Fatal(err)
	}
	scrape(t, s)
	clock.add(time.Minute)
	wantLines(t, scrape(t, s), `vllm:time_to_first_token_seconds_count{model_name="llama",namespace="llm",pod="llama-a"} 48`)
	if err := client.CoreV1().Pods("llm").Delete(context.Background(), "llama-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.add(time.Minute)
	if body := scrape(t, s); strings.Contains(body, "time_to_first_token_seconds_bucket") {
		t.Errorf("a histogram without a server:\n%s", body)
	}
	if _, err := client.CoreV1().Pods("llm").Create(context.Background(), server("llama-a", "llama", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, s), `vllm:time_to_first_token_seconds_count{model_name="llama",namespace="llm",pod="llama-a"} 0`)
	for _, o := range []struct {
		opts Options
		want string
	}{
		{Options{Client: client, PrefillDuration: -time.Second}, "prefill duration: must be positive, got -1s"},
		{Options{Client: client, RequestDuration: -time.Second}, "request duration: must be positive, got -1s"},
	} {
		if _, err := New(o.opts); err == nil || err.Error() != o.want {
			t.Errorf("New: %v, want %q", err, o.want)
		}
	}
}
