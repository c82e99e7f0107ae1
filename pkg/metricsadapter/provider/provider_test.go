package provider

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/internal/promtest"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

const seedConfig = `rules:
- seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}'
  resources:
    overrides:
      exported_namespace:
        resource: namespace
      exported_pod:
        resource: pod
  name:
    matches: "^(.*)$"
    as: "gpu_utilization"
  metricsQuery: 'avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'DCGM_FI_DEV_FB_USED{exported_namespace!="",exported_pod!=""}'
  resources:
    overrides:
      exported_namespace: {resource: namespace}
      exported_pod: {resource: pod}
  name: {as: gpu_fb_used_raw}
  metricsQuery: '<<.Series>>{<<.LabelMatchers>>}'
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

var (
	podsGR       = schema.GroupResource{Resource: "pods"}
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	gpuUtilInfo  = cmprovider.CustomMetricInfo{GroupResource: podsGR, Namespaced: true, Metric: "gpu_utilization"}
	t0           = time.Date(2026, 5, 7, 21, 7, 31, 0, time.UTC)
)

func testMapper() apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, apimeta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, apimeta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, apimeta.RESTScopeRoot)
	return m
}

// fakeLister holds pods by namespace, each with labels.
type fakeLister map[string]map[string]labels.Set

func (f fakeLister) ListNames(_ context.Context, gr schema.GroupResource, ns string, sel labels.Selector) ([]string, error) {
	var names []string
	for name, lbls := range f[ns] {
		if sel.Matches(lbls) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

type fixture struct {
	prom    *promtest.Server
	clock   *clocktesting.FakeClock
	p       *Provider
	metrics *Metrics
	log     *logLines
}

// logLines keeps what the provider logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func newFixture(t testing.TB, pods fakeLister, timeout time.Duration) *fixture {
	t.Helper()
	cfg, err := config.Parse([]byte(seedConfig))
	if err != nil {
		t.Fatal(err)
	}
	var rules, external []*naming.Rule
	for i, r := range cfg.Rules {
		c, err := naming.Compile(fmt.Sprintf("rules[%d]", i), r, false)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, c)
	}
	for i, r := range cfg.ExternalRules {
		c, err := naming.Compile(fmt.Sprintf("externalRules[%d]", i), r, true)
		if err != nil {
			t.Fatal(err)
		}
		external = append(external, c)
	}
	fp := promtest.New(t)
	client, err := prom.New(prom.Options{URL: fp.URL, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0.Add(2 * time.Second))
	m := NewMetrics(prometheus.NewRegistry())
	log := &logLines{}
	p, err := New(Options{Rules: rules, ExternalRules: external, Prometheus: client, Mapper: testMapper(),
		Lister: pods, Clock: clk, RelistInterval: time.Minute, Metrics: m, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{prom: fp, clock: clk, p: p, metrics: m, log: log}
}

func gpuSample(ns, pod, gpu string, value float64, at time.Time) promtest.Sample {
	return promtest.Sample{Labels: map[string]string{"__name__": "DCGM_FI_DEV_GPU_UTIL", "exported_namespace": ns,
		"exported_pod": pod, "gpu": gpu, "namespace": "gpu-operator", "pod": "dcgm-exporter-x"},
		Value: value, At: at}
}

func seedPods() fakeLister {
	return fakeLister{
		"default": {"gpu-hpa-test-a": {"app": "gpu-hpa-test"}, "gpu-hpa-test-b": {"app": "gpu-hpa-test"}, "other": {"app": "x"}},
		"team":    {"gpu-hpa-test-a": {"app": "gpu-hpa-test"}},
	}
}

func TestSeedRuleServesPodsInNamespace(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 100, t0), gpuSample("default", "gpu-hpa-test-b", "1", 0, t0.Add(-time.Second)),
		gpuSample("team", "gpu-hpa-test-a", "2", 55, t0))
	if err := f.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []cmprovider.CustomMetricInfo{
		{GroupResource: namespacesGR, Metric: "gpu_utilization"},
		gpuUtilInfo,
	}
	if got := f.p.ListAllMetrics(); !equalInfos(got, want) {
		t.Errorf("ListAllMetrics = %v, want %v", got, want)
	}

	list, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("got %d items, want 2 (pods of default with samples): %+v", len(list.Items), list.Items)
	}
	for i, want := range []struct {
		name  string
		value int64
		at    time.Time
	}{{"gpu-hpa-test-a", 100, t0}, {"gpu-hpa-test-b", 0, t0.Add(-time.Second)}} {
		it := list.Items[i]
		if it.DescribedObject.Name != want.name || it.DescribedObject.Namespace != "default" ||
			it.DescribedObject.Kind != "Pod" || it.DescribedObject.APIVersion != "/v1" {
			t.Errorf("item %d described %+v, want Pod default/%s apiVersion /v1", i, it.DescribedObject, want.name)
		}
		if it.Metric.Name != "gpu_utilization" || it.Value.Value() != want.value || it.Value.String() != it.Value.AsDec().String() {
			t.Errorf("item %d = %s %s, want gpu_utilization %d as a plain number", i, it.Metric.Name, it.Value.String(), want.value)
		}
		if !it.Timestamp.Time.Equal(want.at) {
			t.Errorf("item %d timestamp %v, want the sample's own %v", i, it.Timestamp.Time, want.at)
		}
	}
	q := f.prom.LastQuery()
	wantQ := `avg(DCGM_FI_DEV_GPU_UTIL{exported_pod=~"gpu-hpa-test-a|gpu-hpa-test-b|other",exported_namespace="default"}) by (exported_pod)`
	if q != wantQ {
		t.Errorf("query = %s\nwant    %s", q, wantQ)
	}

	byName, err := f.p.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "team", Name: "gpu-hpa-test-a"},
		gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if byName.Value.Value() != 55 || byName.DescribedObject.Namespace != "team" {
		t.Errorf("GetMetricByName = %+v, want 55 in team", byName)
	}
}

func TestSelectorLimitsObjects(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 40, t0), gpuSample("default", "other", "1", 90, t0))
	sel := labels.SelectorFromSet(labels.Set{"app": "gpu-hpa-test"})
	list, err := f.p.GetMetricBySelector(context.Background(), "default", sel, gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].DescribedObject.Name != "gpu-hpa-test-a" {
		t.Errorf("items = %+v, want only gpu-hpa-test-a", list.Items)
	}
}

func TestDiscoverOnMiss(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	if err := f.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.p.ListAllMetrics()) != 0 {
		t.Fatalf("metrics before any series: %v", f.p.ListAllMetrics())
	}
	before := f.prom.SeriesCalls()
	_, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if !apierrors.IsNotFound(err) {
		t.Fatalf("no series yet: err = %v, want NotFound", err)
	}
	// Only the rule that can name gpu_utilization is listed again.
	if got := f.prom.SeriesCalls() - before; got != 1 {
		t.Errorf("a miss listed series %d times, want 1", got)
	}

	// Series appear after start: served without waiting for the relist,
	// once the miss interval has passed.
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 100, t0))
	before = f.prom.SeriesCalls()
	if _, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("within the miss interval: err = %v, want NotFound without a new listing", err)
	}
	if f.prom.SeriesCalls() != before {
		t.Errorf("misses within MinRediscoverInterval listed series again")
	}
	f.clock.Step(time.Second)
	list, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatalf("after the series appeared: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Value.Value() != 100 {
		t.Errorf("items = %+v, want gpu-hpa-test-a = 100", list.Items)
	}
	// Now cached: further requests list no series.
	before = f.prom.SeriesCalls()
	f.clock.Step(time.Minute / 2)
	if _, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything()); err != nil {
		t.Fatal(err)
	}
	if f.prom.SeriesCalls() != before {
		t.Errorf("a known metric listed series again")
	}
}

// An object with several samples is left out of a list, which serves the
// others, and is reported; asked for by name, or when no object is left,
// it is an error naming the rule and the object.
func TestSeveralSamplesForOneObjectAreLeftOutAndReported(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	fb := func(pod, gpu string, v float64) promtest.Sample {
		s := gpuSample("default", pod, gpu, v, t0)
		s.Labels["__name__"] = "DCGM_FI_DEV_FB_USED"
		return s
	}
	f.prom.Add(fb("gpu-hpa-test-a", "0", 1000), fb("gpu-hpa-test-a", "1", 2000), fb("gpu-hpa-test-b", "2", 500))
	info := cmprovider.CustomMetricInfo{GroupResource: podsGR, Namespaced: true, Metric: "gpu_fb_used_raw"}
	list, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), info, labels.Everything())
	if err != nil {
		t.Fatalf("one ambiguous pod failed the whole list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].DescribedObject.Name != "gpu-hpa-test-b" || list.Items[0].Value.Value() != 500 {
		t.Errorf("items %+v, want gpu-hpa-test-b alone", list.Items)
	}
	if got := testutil.ToFloat64(f.metrics.unusableObj.WithLabelValues("rules[1]", "gpu_fb_used_raw", "ambiguous")); got != 1 {
		t.Errorf("unusable_objects_total{ambiguous} = %v, want 1", got)
	}
	for _, want := range []string{"no usable value", "rules[1]", "gpu_fb_used_raw", "gpu-hpa-test-a: 2 samples"} {
		if !strings.Contains(f.log.all(), want) {
			t.Errorf("log %q does not mention %q", f.log.all(), want)
		}
	}
	_, err = f.p.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "default", Name: "gpu-hpa-test-a"}, info, labels.Everything())
	if !apierrors.IsInternalError(err) {
		t.Fatalf("by name: err = %v, want an internal error", err)
	}
	for _, want := range []string{"rules[1]", "gpu-hpa-test-a: 2 samples", "aggregate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	only := newFixture(t, seedPods(), time.Second)
	only.prom.Add(fb("gpu-hpa-test-a", "0", 1000), fb("gpu-hpa-test-a", "1", 2000))
	_, err = only.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), info, labels.Everything())
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "gpu-hpa-test-a: 2 samples") {
		t.Errorf("no usable object: err = %v, want an internal error naming gpu-hpa-test-a", err)
	}
}

func TestNaNIsLeftOutAndReportedNotZero(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", math.NaN(), t0), gpuSample("default", "gpu-hpa-test-b", "1", 10, t0))
	list, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatalf("one NaN failed the whole list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].DescribedObject.Name != "gpu-hpa-test-b" {
		t.Errorf("items %+v, want gpu-hpa-test-b alone (a NaN is not 0)", list.Items)
	}
	if got := testutil.ToFloat64(f.metrics.unusableObj.WithLabelValues("rules[0]", "gpu_utilization", "not_a_number")); got != 1 {
		t.Errorf("unusable_objects_total{not_a_number} = %v, want 1", got)
	}
	if !strings.Contains(f.log.all(), "gpu-hpa-test-a: value is NaN") {
		t.Errorf("log %q does not report gpu-hpa-test-a's NaN", f.log.all())
	}
	_, err = f.p.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "default", Name: "gpu-hpa-test-a"}, gpuUtilInfo, labels.Everything())
	if err == nil || !strings.Contains(err.Error(), "NaN") || !strings.Contains(err.Error(), "gpu-hpa-test-a") || !strings.Contains(err.Error(), "rules[0]") {
		t.Errorf("by name: err = %v, want one reporting NaN for gpu-hpa-test-a under rules[0]", err)
	}
}

func TestFractionalValuesAreExact(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 19.6, t0), gpuSample("default", "gpu-hpa-test-b", "1", 0.0004, t0))
	list, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if got := list.Items[0].Value.AsApproximateFloat64(); got != 19.6 {
		t.Errorf("19.6 became %v", got)
	}
	if got := list.Items[1].Value.AsApproximateFloat64(); got != 0.0004 {
		t.Errorf("0.0004 became %v (%s), want it kept rather than rounded to 0", got, list.Items[1].Value.String())
	}
	if list.Items[0].Value.String() != "19600m" || list.Items[1].Value.String() != "400u" {
		t.Errorf("quantities = %s, %s; want 19600m, 400u", list.Items[0].Value.String(), list.Items[1].Value.String())
	}
}

func TestPrometheusFailuresMapToAPIErrors(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		typ    string
		check  func(error) bool
		reason string
	}{
		{"bad query", http.StatusBadRequest, "bad_data", apierrors.IsInternalError, "InternalError"},
		{"server error", http.StatusServiceUnavailable, "unavailable", apierrors.IsServiceUnavailable, "ServiceUnavailable"},
		{"evaluation timeout", http.StatusServiceUnavailable, "timeout", apierrors.IsTimeout, "Timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, seedPods(), time.Second)
			f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 1, t0))
			if err := f.p.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.prom.Fail(tc.code, tc.typ)
			_, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
			if !tc.check(err) {
				t.Fatalf("err = %v (%s), want %s", err, apierrors.ReasonForError(err), tc.reason)
			}
			if !strings.Contains(err.Error(), "rules[0]") {
				t.Errorf("error %q does not name the rule", err)
			}
			if got := testutil.ToFloat64(f.metrics.errors.WithLabelValues("custom", "by_selector", tc.reason)); got != 1 {
				t.Errorf("request_errors_total{reason=%s} = %v, want 1", tc.reason, got)
			}
			// The metric stays known: a failed relist keeps what was found.
			if err := f.p.Refresh(context.Background()); err == nil {
				t.Error("Refresh succeeded against a failing Prometheus")
			}
			if len(f.p.ListAllMetrics()) == 0 {
				t.Error("a failed relist dropped the known metrics")
			}
		})
	}
}

func TestPrometheusTimeoutAndUnreachable(t *testing.T) {
	f := newFixture(t, seedPods(), 50*time.Millisecond)
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 1, t0))
	if err := f.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.prom.Block() // answers only after the test ends
	_, err := f.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if !apierrors.IsTimeout(err) {
		t.Errorf("slow Prometheus: err = %v, want a Timeout (504) error", err)
	}

	down := newFixture(t, seedPods(), time.Second)
	down.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 1, t0))
	if err := down.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	down.prom.Close()
	_, err = down.p.GetMetricBySelector(context.Background(), "default", labels.Everything(), gpuUtilInfo, labels.Everything())
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("unreachable Prometheus: err = %v, want ServiceUnavailable (503)", err)
	}
	// An unknown metric while Prometheus is down is not "not found".
	_, err = down.p.GetMetricBySelector(context.Background(), "default", labels.Everything(),
		cmprovider.CustomMetricInfo{GroupResource: podsGR, Namespaced: true, Metric: "gpu_fb_used_raw"}, labels.Everything())
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("unknown metric with Prometheus down: err = %v, want ServiceUnavailable", err)
	}
}

func TestExternalMetric(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	f.prom.Add(
		promtest.Sample{Labels: map[string]string{"__name__": "queue_depth", "namespace": "ml", "queue": "train"}, Value: 7, At: t0},
		promtest.Sample{Labels: map[string]string{"__name__": "queue_depth", "namespace": "ml", "queue": "infer"}, Value: 3, At: t0},
		promtest.Sample{Labels: map[string]string{"__name__": "queue_depth", "namespace": "web", "queue": "train"}, Value: 100, At: t0},
	)
	if err := f.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.p.ListAllExternalMetrics(); len(got) != 1 || got[0].Metric != "queue_depth" {
		t.Fatalf("ListAllExternalMetrics = %v", got)
	}
	sel := labels.SelectorFromSet(labels.Set{"queue": "train"})
	list, err := f.p.GetExternalMetric(context.Background(), "ml", sel, cmprovider.ExternalMetricInfo{Metric: "queue_depth"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Value.Value() != 7 || list.Items[0].MetricLabels["queue"] != "train" ||
		!list.Items[0].Timestamp.Time.Equal(t0) {
		t.Errorf("items = %+v, want queue=train in ml = 7 at %v", list.Items, t0)
	}
	if want := `sum(queue_depth{namespace="ml",queue="train"}) by (queue)`; f.prom.LastQuery() != want {
		t.Errorf("query = %s, want %s", f.prom.LastQuery(), want)
	}
	_, err = f.p.GetExternalMetric(context.Background(), "ml", labels.Everything(), cmprovider.ExternalMetricInfo{Metric: "nope"})
	if !apierrors.IsNotFound(err) {
		t.Errorf("unknown external metric: err = %v, want NotFound", err)
	}
}

func TestRunRelistsOnTicker(t *testing.T) {
	f := newFixture(t, seedPods(), time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return f.clock.HasWaiters() })
	f.prom.Add(gpuSample("default", "gpu-hpa-test-a", "0", 1, t0))
	f.clock.Step(time.Minute)
	waitFor(t, func() bool { return len(f.p.ListAllMetrics()) == 2 })
}

// waitFor polls a condition a goroutine will make true; it bounds the wait
// so a broken loop fails instead of hanging.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}

func equalInfos(a, b []cmprovider.CustomMetricInfo) bool {
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
