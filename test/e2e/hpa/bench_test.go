package hpa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// benchPods is the number of GPU pods the adapter answers for.
const benchPods = 1000

// BenchmarkAdapterPods measures GET
// /apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_utilization
// with 1,000 GPU pods (10 kwok nodes of 100 GPUs), the walkthrough's rule
// and a real Prometheus on loopback. "via-apiserver" goes through
// kube-apiserver's aggregator, as the HPA controller's requests do;
// "direct" asks the adapter itself. Both report p50-ms and p99-ms of the
// requests' wall time; use -benchtime 2000x or so for a stable p99:
//
//	go test -run '^$' -bench AdapterPods -benchtime 2000x ./test/e2e/hpa/
func BenchmarkAdapterPods(b *testing.B) {
	e := newEnv(b, envOptions{GPUNodes: 10, GPUsPerNode: benchPods / 10, ScrapeInterval: 5 * time.Second})
	port := e.startAdapter(b, "../../../examples/metrics-adapter/gpu-utilization-values.yaml")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dep, _ := walkthroughObjects(b, metav1.NamespaceDefault, "gpu-bench")
	replicas := int32(benchPods)
	dep.Spec.Replicas = &replicas
	start := time.Now()
	createDeployment(ctx, b, e, dep)
	runningPods(ctx, b, e, dep.Namespace, dep.Name, benchPods, 5*time.Minute)
	b.Logf("%d pods running in %v", benchPods, time.Since(start).Round(time.Second))

	path := fmt.Sprintf(podsPath, dep.Namespace)
	var items int
	if err := poll(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		body, err := e.raw(ctx, path)
		if err != nil {
			return false, nil
		}
		items = countItems(body)
		return items == benchPods, nil
	}); err != nil {
		b.Fatalf("adapter never answered for %d pods (last: %d items): %v", benchPods, items, err)
	}

	// The adapter trusts the cluster's client CA (delegated authentication),
	// so the admin's certificate reaches it directly too.
	direct := rest.CopyConfig(e.c.Config)
	direct.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	direct.TLSClientConfig.Insecure, direct.TLSClientConfig.CAFile, direct.TLSClientConfig.CAData = true, "", nil
	directClient, err := rest.HTTPClientFor(direct)
	if err != nil {
		b.Fatal(err)
	}
	viaClient, err := rest.HTTPClientFor(e.c.Config)
	if err != nil {
		b.Fatal(err)
	}

	// What the adapter asks Prometheus for this request, asked directly.
	pods, err := e.c.Client.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + dep.Name})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		names = append(names, regexp.QuoteMeta(p.Name))
	}
	promQuery := fmt.Sprintf(`avg(DCGM_FI_DEV_GPU_UTIL{exported_pod=~%q,exported_namespace=%q}) by (exported_pod)`,
		strings.Join(names, "|"), dep.Namespace)
	cpu := processCPU{"adapter": e.adapter.Pid(), "prometheus": e.prom.Pid()}
	if data, err := os.ReadFile(filepath.Join(e.c.Dir, "pids", "kube-apiserver.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			cpu["apiserver"] = pid
		}
	}
	b.Run("prometheus-query", func(b *testing.B) {
		var lat []time.Duration
		defer cpu.report(b)()
		for b.Loop() {
			t0 := time.Now()
			v, _, _, err := e.promAPI.Query(ctx, promQuery, time.Now())
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if vec, ok := v.(model.Vector); !ok || len(vec) != benchPods {
				b.Fatalf("Prometheus answered %d samples, want %d", len(vec), benchPods)
			}
		}
		reportPercentiles(b, lat)
	})

	for _, bc := range []struct {
		name, url string
		client    *http.Client
	}{{"via-apiserver", e.c.Config.Host + path, viaClient}, {"direct", direct.Host + path, directClient}} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			defer cpu.report(b)()
			for b.Loop() {
				t0 := time.Now()
				body, err := get(ctx, bc.client, bc.url)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if n := countItems(body); n != benchPods {
					b.Fatalf("GET %s: %d items, want %d", path, n, benchPods)
				}
			}
			reportPercentiles(b, lat)
		})
	}
}

// get reads url's body, failing on any status but 200.
func get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}

func countItems(body []byte) int {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &list) != nil {
		return -1
	}
	return len(list.Items)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
}

// processCPU names processes whose CPU time per operation a benchmark
// reports: on a shared machine wall times swell with others' load, CPU
// time much less.
type processCPU map[string]int

// report reads the processes' CPU time now and returns a func that reports
// "<name>-cpu-ms/op" for the time used since. Without /proc it reports nothing.
func (pc processCPU) report(b *testing.B) func() {
	before := map[string]time.Duration{}
	for name, pid := range pc {
		if d, ok := cpuTime(pid); ok {
			before[name] = d
		}
	}
	return func() {
		for name, d0 := range before {
			if d, ok := cpuTime(pc[name]); ok && b.N > 0 {
				b.ReportMetric(ms(d-d0)/float64(b.N), name+"-cpu-ms/op")
			}
		}
	}
}

// cpuTime is a process's user plus system time from /proc/PID/stat, in
// clock ticks of 10 ms (USER_HZ is 100 on Linux).
func cpuTime(pid int) (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesized command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	end := strings.LastIndexByte(string(data), ')')
	if end < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
