package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// prometheusBinDir skips unless end-to-end tests run and Prometheus is built.
func prometheusBinDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("SKIP_E2E") == "1" || testing.Short() {
		t.Skip("SKIP_E2E=1 or -short: skipping a test that runs Prometheus")
	}
	binDir, built, err := CheckTools(context.Background(), PrometheusTool)
	if err != nil {
		t.Fatal(err)
	}
	if !built {
		t.Skip("prometheus is not built: run hack/build-tools.sh prometheus")
	}
	return binDir
}

// A real Prometheus scraping a dcgm-exporter-like target as
// kube-prometheus-stack does: the exporter's namespace and pod labels
// arrive as exported_namespace and exported_pod, next to the exporter's own.
func TestPrometheusScrapesDCGMExporterLikeAServiceMonitor(t *testing.T) {
	binDir := prometheusBinDir(t)
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
		fmt.Fprintln(w, `DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0",namespace="default",pod="gpu-hpa-test-1",container="cuda-test"} 42`)
	}))
	defer exporter.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target := strings.TrimPrefix(exporter.URL, "http://")
	prom, err := StartPrometheus(ctx, PrometheusOptions{
		BinDir:         binDir,
		Dir:            t.TempDir(),
		ScrapeInterval: time.Second,
		Jobs:           []ScrapeJob{DCGMExporterJob(target)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := prom.Stop(); err != nil {
			t.Errorf("prometheus stop: %v", err)
		}
	}()
	if !strings.HasPrefix(prom.URL, "http://127.0.0.1:") {
		t.Errorf("URL %s is not on loopback", prom.URL)
	}

	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	q := promv1.NewAPI(client)
	var vec model.Vector
	for len(vec) == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no DCGM_FI_DEV_GPU_UTIL series in time; log:\n%s", prom.LogTail(20))
		}
		v, _, _, err := q.Query(ctx, `DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}`, time.Now())
		if err == nil {
			vec, _ = v.(model.Vector)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(vec) != 1 {
		t.Fatalf("got %d series, want 1: %v", len(vec), vec)
	}
	m := vec[0].Metric
	want := map[model.LabelName]string{
		"exported_namespace": "default",
		"exported_pod":       "gpu-hpa-test-1",
		"exported_container": "cuda-test",
		"namespace":          DCGMExporterTarget().Namespace,
		"pod":                DCGMExporterTarget().Pod,
		"job":                DCGMExporterTarget().Service,
		"gpu":                "0",
	}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("label %s = %q, want %q (series %v)", k, m[k], v, m)
		}
	}
	if vec[0].Value != 42 {
		t.Errorf("value %v, want 42", vec[0].Value)
	}

	// SetJobs reloads: a second target's series appear.
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "second_up 1")
	}))
	defer second.Close()
	if err := prom.SetJobs(ctx, []ScrapeJob{DCGMExporterJob(target), {Name: "second", Targets: []string{strings.TrimPrefix(second.URL, "http://")}}}); err != nil {
		t.Fatal(err)
	}
	for {
		v, _, _, err := q.Query(ctx, `second_up{job="second"}`, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("second job never scraped after SetJobs (last err %v); log:\n%s", err, prom.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestStartPrometheusNamesMissingOptions(t *testing.T) {
	_, err := StartPrometheus(context.Background(), PrometheusOptions{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "BinDir") {
		t.Fatalf("err = %v, want one naming BinDir", err)
	}
}
