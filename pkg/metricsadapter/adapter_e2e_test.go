package metricsadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/examples"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/internal/promtest"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// TestAdapterOnLocalControlPlane runs the adapter as the demo and the
// end-to-end tests do (outside the cluster, registered through an
// ExternalName Service) and reads the seed's metric through the
// aggregation layer. Prometheus is the stand-in: this test is about the
// serving path; the walkthrough with a real Prometheus and the HPA lives
// with the end-to-end tests.
func TestAdapterOnLocalControlPlane(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	prom := promtest.New(t) // no series yet: the metric appears after the adapter starts
	dir := t.TempDir()
	configFile := filepath.Join(dir, "adapter-values.yaml")
	if err := os.WriteFile(configFile, []byte(examples.GPUUtilizationAdapterValues), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	opts := metricsadapter.NewOptions()
	fs := pflag.NewFlagSet("metrics-adapter", pflag.ContinueOnError)
	opts.AddFlags(fs)
	err := fs.Parse([]string{
		fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1", "--cert-dir=" + filepath.Join(dir, "certs"),
		"--lister-kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--prometheus-url=" + prom.URL, "--config=" + configFile,
		"--metrics-relist-interval=10m", // only discovery on a miss can find the metric in time
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- metricsadapter.Run(runCtx, opts) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("adapter: %v", err)
		}
	})

	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := metricsadapter.RegisterLocal(ctx, dyn, metav1.NamespaceDefault, port); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-hpa-test-7c6b78785c-4k8mb", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"app": "gpu-hpa-test"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cuda-test", Image: "cuda"}}},
	}
	if _, err := c.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the adapter's first listing find nothing, so that only discovery
	// on a miss can serve the metric (the next relist is 10 minutes away).
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return prom.SeriesCalls() > 0, nil
	}); err != nil {
		t.Fatalf("the adapter never listed series: %v", err)
	}
	sampleAt := time.Date(2026, 5, 7, 21, 7, 31, 0, time.UTC)
	prom.Add(promtest.Sample{Labels: map[string]string{"__name__": "DCGM_FI_DEV_GPU_UTIL", "exported_namespace": "default",
		"exported_pod": pod.Name, "gpu": "0", "UUID": "GPU-0", "namespace": "gpu-operator"}, Value: 0, At: sampleAt})

	path := "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_utilization"
	body := getWhenReady(ctx, t, c.Config, path)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v: %s", path, err, body)
	}
	want := map[string]any{
		"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1", "metadata": map[string]any{},
		"items": []any{map[string]any{
			"describedObject": map[string]any{"kind": "Pod", "namespace": "default", "name": pod.Name, "apiVersion": "/v1"},
			"metricName":      "gpu_utilization",
			"timestamp":       sampleAt.Format(time.RFC3339),
			"value":           "0",
			"selector":        nil,
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s =\n%s\nwant the seed's shape\n%v", path, body, want)
	}

	// Each group version is its own APIService, which the aggregator marks
	// available on its own: v1beta1 answering says nothing of v1beta2 yet.
	for _, p := range []string{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/gpu_utilization",
		"/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/" + pod.Name + "/gpu_utilization",
		"/apis/external.metrics.k8s.io/v1beta1",
	} {
		getWhenReady(ctx, t, c.Config, p)
	}

	// The adapter's own metrics are on its /metrics.
	metrics := getAdapter(ctx, t, c.Config, port, "/metrics")
	for _, name := range []string{"gpuscale_metrics_adapter_request_duration_seconds", "gpuscale_metrics_adapter_prometheus_query_duration_seconds",
		`gpuscale_metrics_adapter_discoveries_total{result="ok",trigger="miss"}`} {
		if !strings.Contains(metrics, name) {
			t.Errorf("adapter /metrics lacks %s", name)
		}
	}
}

// getWhenReady GETs path through the API server until the APIService is
// available and the answer is 200.
func getWhenReady(ctx context.Context, t *testing.T, cfg *rest.Config, path string) []byte {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	var body []byte
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := newRequest(ctx, cfg.Host+path)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		return resp.StatusCode == 200, nil
	})
	if err != nil {
		t.Fatalf("GET %s never answered 200: last %s", path, last)
	}
	return body
}

// getAdapter GETs path from the adapter directly, as the cluster admin.
func getAdapter(ctx context.Context, t *testing.T, cfg *rest.Config, port int, path string) string {
	t.Helper()
	direct := rest.CopyConfig(cfg)
	direct.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	direct.TLSClientConfig.Insecure = true
	direct.TLSClientConfig.CAData, direct.TLSClientConfig.CAFile = nil, ""
	client, err := rest.HTTPClientFor(direct)
	if err != nil {
		t.Fatal(err)
	}
	req, err := newRequest(ctx, direct.Host+path)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET adapter %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET adapter %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newRequest(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}
