package metricsadapter

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/examples"
	"github.com/gpuscale/gpuscale/pkg/inferencesim"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/internal/promtest"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/provider"
)

// podLister lists the pods of one namespace by name.
type podLister map[string]labels.Set

func (l podLister) ListNames(_ context.Context, _ schema.GroupResource, _ string, sel labels.Selector) ([]string, error) {
	var out []string
	for name, lbls := range l {
		if sel.Matches(lbls) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func podMapper() apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, apimeta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, apimeta.RESTScopeRoot)
	return m
}

// inferenceFixture serves an example adapter config from scrapes of an
// inference server's /metrics page, one per pod.
type inferenceFixture struct {
	prom *promtest.Server
	p    *provider.Provider
}

func newInferenceFixture(t *testing.T, values, scrapeFile string, pods map[string]float64, at time.Time) *inferenceFixture {
	t.Helper()
	cfg, err := config.Parse([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := CompileRules(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("..", "..", "examples", "metrics-adapter", "testdata", scrapeFile))
	if err != nil {
		t.Fatal(err)
	}
	fp := promtest.New(t)
	lister := podLister{}
	for pod := range pods {
		if err := fp.AddScrape(string(text), map[string]string{"namespace": "llm", "pod": pod}, at); err != nil {
			t.Fatal(err)
		}
		lister[pod] = labels.Set{"app": "llama"}
	}
	return serveFrom(t, rules, fp, lister, at)
}

func serveFrom(t *testing.T, rules *Rules, fp *promtest.Server, lister podLister, at time.Time) *inferenceFixture {
	t.Helper()
	client, err := prom.New(prom.Options{URL: fp.URL, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.New(provider.Options{Rules: rules.Custom, ExternalRules: rules.External, Prometheus: client, Mapper: podMapper(),
		Lister: lister, Clock: clocktesting.NewFakeClock(at.Add(time.Second)), RelistInterval: time.Minute,
		Metrics: provider.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &inferenceFixture{prom: fp, p: p}
}

func (f *inferenceFixture) customNames() []string {
	var out []string
	for _, m := range f.p.ListAllMetrics() {
		if m.GroupResource.Resource == "pods" {
			out = append(out, m.Metric)
		}
	}
	sort.Strings(out)
	return out
}

func (f *inferenceFixture) externalNames() []string {
	var out []string
	for _, m := range f.p.ListAllExternalMetrics() {
		out = append(out, m.Metric)
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The vLLM example serves every metric it documents, per pod and per
// model, from what a vLLM server's /metrics page holds.
func TestVLLMExampleServesItsMetrics(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f := newInferenceFixture(t, examples.VLLMAdapterValues, "vllm-metrics.txt", map[string]float64{"llama-0": 1, "llama-1": 1}, at)
	if got, want := f.customNames(), []string{"vllm_kv_cache_usage_perc", "vllm_num_requests_running", "vllm_num_requests_waiting", "vllm_time_to_first_token_seconds"}; !equal(got, want) {
		t.Fatalf("custom pod metrics %v, want %v", got, want)
	}
	if got, want := f.externalNames(), []string{"vllm_requests_running", "vllm_requests_waiting", "vllm_time_to_first_token_p90_seconds"}; !equal(got, want) {
		t.Fatalf("external metrics %v, want %v", got, want)
	}

	ctx := context.Background()
	info := cmprovider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: "vllm_num_requests_waiting"}
	list, err := f.p.GetMetricBySelector(ctx, "llm", labels.SelectorFromSet(labels.Set{"app": "llama"}), info, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Value.MilliValue() != 7000 || list.Items[1].Value.MilliValue() != 7000 {
		t.Fatalf("waiting per pod = %+v, want 7 for each of 2 pods", list.Items)
	}
	if want := `sum(vllm:num_requests_waiting{pod=~"llama-0|llama-1",namespace="llm"}) by (pod)`; f.prom.LastQuery() != want {
		t.Errorf("query %s, want %s", f.prom.LastQuery(), want)
	}
	info.Metric = "vllm_kv_cache_usage_perc"
	list, err = f.p.GetMetricBySelector(ctx, "llm", labels.Everything(), info, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Value.MilliValue() != 830 {
		t.Fatalf("KV cache per pod = %+v, want 830m", list.Items)
	}

	info.Metric = "vllm_time_to_first_token_seconds"
	if _, err := f.p.GetMetricBySelector(ctx, "llm", labels.Everything(), info, labels.Everything()); err != nil {
		t.Fatal(err)
	}
	// The stand-in Prometheus runs no PromQL: check the query asked for.
	if want := `sum(rate(vllm:time_to_first_token_seconds_sum{pod=~"llama-0|llama-1",namespace="llm"}[1m])) by (pod) / sum(rate(vllm:time_to_first_token_seconds_count{pod=~"llama-0|llama-1",namespace="llm"}[1m])) by (pod)`; f.prom.LastQuery() != want {
		t.Errorf("query %s, want %s", f.prom.LastQuery(), want)
	}

	// External, per model: the HPA sums the items; here 7 waiting on each
	// of two servers of llama-3-8b.
	ext, err := f.p.GetExternalMetric(ctx, "llm", labels.SelectorFromSet(labels.Set{"model_name": "llama-3-8b"}),
		cmprovider.ExternalMetricInfo{Metric: "vllm_requests_waiting"})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, it := range ext.Items {
		total += it.Value.MilliValue()
	}
	if total != 14000 {
		t.Fatalf("waiting for llama-3-8b = %dm over %d items, want 14000m", total, len(ext.Items))
	}
	if want := `sum(vllm:num_requests_waiting{namespace="llm",model_name="llama-3-8b"}) by (model_name)`; f.prom.LastQuery() != want {
		t.Errorf("query %s, want %s", f.prom.LastQuery(), want)
	}
	// A model with no server running has no series: the HPA reads an
	// error, not 0, so these metrics cannot lift a model from 0 replicas.
	_, err = f.p.GetExternalMetric(ctx, "llm", labels.SelectorFromSet(labels.Set{"model_name": "other"}),
		cmprovider.ExternalMetricInfo{Metric: "vllm_requests_waiting"})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("a model without servers: err = %v, want NotFound", err)
	}
}

// The stand-in inference server's page, scraped with honor_labels, is
// served by the vLLM example as written; with no server running, the
// requests at the router are the model's external queue, so an HPA at
// minReplicas 0 reads 12 waiting rather than "not found".
func TestInferenceSimServedByTheVLLMExample(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	sim, err := inferencesim.New(inferencesim.Options{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.SetLoad(inferencesim.Model{Namespace: "llm", Name: "llama-3-8b"}, 12); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	sim.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	fp := promtest.New(t)
	if err := fp.AddScrape(rec.Body.String(), map[string]string{"namespace": "inference-sim", "pod": "inference-sim-0"}, at); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(examples.VLLMAdapterValues))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := CompileRules(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	f := serveFrom(t, rules, fp, podLister{}, at)
	ext, err := f.p.GetExternalMetric(context.Background(), "llm", labels.SelectorFromSet(labels.Set{"model_name": "llama-3-8b"}),
		cmprovider.ExternalMetricInfo{Metric: "vllm_requests_waiting"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ext.Items) != 1 || ext.Items[0].Value.MilliValue() != 12000 {
		t.Fatalf("items %+v, want one of 12", ext.Items)
	}
}

// Each server's example serves the metrics its header lists, from a scrape
// of that server's /metrics page on two pods (an EPP or a frontend counts
// once per pod too: the sums below say so).
func TestInferenceServerExamples(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		values, scrape string
		target         map[string]string // target labels beside namespace and pod
		custom         []string
		external       []string
		metric         string // an external metric, its selector and the sum over two pods (milli)
		selector       labels.Set
		want           int64
	}{
		{"sglang-values.yaml", "sglang-metrics.txt", nil,
			[]string{"sglang_num_queue_reqs", "sglang_num_running_reqs", "sglang_token_usage"},
			[]string{"sglang_queue_reqs", "sglang_running_reqs"},
			"sglang_queue_reqs", labels.Set{"model_name": "qwen3-8b"}, 10000},
		{"tgi-values.yaml", "tgi-metrics.txt", map[string]string{"service": "tgi-mistral"},
			[]string{"tgi_batch_current_size", "tgi_queue_size"},
			[]string{"tgi_queued_requests"},
			"tgi_queued_requests", labels.Set{"service": "tgi-mistral"}, 6000},
		{"dynamo-values.yaml", "dynamo-metrics.txt", nil, nil,
			[]string{"dynamo_frontend_inflight_requests", "dynamo_frontend_queued_requests"},
			"dynamo_frontend_queued_requests", labels.Set{"model": "kimi-k2"}, 18000},
		{"inference-gateway-values.yaml", "inference-gateway-metrics.txt", nil, nil,
			[]string{"inference_pool_average_kv_cache_utilization", "inference_pool_average_queue_size", "inference_pool_ready_pods"},
			"inference_pool_average_queue_size", labels.Set{"name": "llama-pool"}, 5000},
	} {
		t.Run(tc.values, func(t *testing.T) {
			dir := filepath.Join("..", "..", "examples", "metrics-adapter")
			cfg, err := config.Load(filepath.Join(dir, tc.values))
			if err != nil {
				t.Fatal(err)
			}
			rules, err := CompileRules(cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(filepath.Join(dir, "testdata", tc.scrape))
			if err != nil {
				t.Fatal(err)
			}
			fp := promtest.New(t)
			lister := podLister{}
			for _, pod := range []string{"server-0", "server-1"} {
				target := map[string]string{"namespace": "llm", "pod": pod}
				for k, v := range tc.target {
					target[k] = v
				}
				if err := fp.AddScrape(string(text), target, at); err != nil {
					t.Fatal(err)
				}
				lister[pod] = labels.Set{"app": "server"}
			}
			f := serveFrom(t, rules, fp, lister, at)
			if got := f.customNames(); !equal(got, tc.custom) {
				t.Errorf("custom pod metrics %v, want %v", got, tc.custom)
			}
			if got := f.externalNames(); !equal(got, tc.external) {
				t.Errorf("external metrics %v, want %v", got, tc.external)
			}
			for _, name := range tc.custom {
				info := cmprovider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: name}
				list, err := f.p.GetMetricBySelector(context.Background(), "llm", labels.Everything(), info, labels.Everything())
				if err != nil || len(list.Items) != 2 {
					t.Errorf("custom %s: %v, %v; want a value for each of 2 pods", name, list, err)
				}
			}
			ext, err := f.p.GetExternalMetric(context.Background(), "llm", labels.SelectorFromSet(tc.selector), cmprovider.ExternalMetricInfo{Metric: tc.metric})
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, it := range ext.Items {
				total += it.Value.MilliValue()
			}
			if total != tc.want {
				t.Errorf("%s%v = %dm over %d items, want %dm", tc.metric, tc.selector, total, len(ext.Items), tc.want)
			}
		})
	}
}
