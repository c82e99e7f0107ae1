package autoscaler_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// BenchmarkLargeKwokRun is the large local run (make bench-kwok): the live
// autoscaler on the real control plane with kwok nodes, at
// GPUSCALE_KWOK_NODES nodes (make bench-kwok: 5,000) of ten pods each.
//
//   - Burst: a Deployment "stay" of (nodes-removed) x 10 pods and one "go"
//     of removed x 10 pods (removed: a fifth of the nodes, at most 1,000)
//     land on an empty group of 16-cpu nodes, ten 1500m pods a node. It
//     reports the time until every pod runs (s-to-all-running) and the
//     nodes added.
//   - Scale-down: "go" is scaled to a fifth of its pods, which leaves its
//     nodes about a fifth used; the autoscaler drains and removes them,
//     its pods packed onto fewer nodes. It waits until the group has
//     shrunk by three quarters of removed nodes, or until no node has gone
//     for three scale-down periods (unneeded time and a scan interval):
//     the nodes left are then above the utilization threshold, which
//     packing ten pods a node leaves some of. It reports the time to the
//     last removal (s-to-remove) and the nodes removed.
//
// Each figure is also logged as soon as it is measured, so that a run
// that fails later (a wait that times out) still reports it.
//
// Throughout: the autoscaler's loop time from its own histogram (ms/loop,
// loops), the API requests its client made per loop (counted at the
// client's transport, the kwok provider's node writes apart), the heap in
// use after a collection and the process's peak resident memory (the
// autoscaler runs in the test process). The client rate is
// GPUSCALE_KWOK_QPS / GPUSCALE_KWOK_BURST (default 50 / 100; the
// autoscaler's defaults are 5 / 10); kube-controller-manager's is
// GPUSCALE_KWOK_CONTROLLER_QPS (default 500, burst twice that; its own
// default is 20). Skipped unless GPUSCALE_KWOK_NODES is
// set, so that make bench does not start it.
func BenchmarkLargeKwokRun(b *testing.B) {
	if os.Getenv("GPUSCALE_KWOK_NODES") == "" {
		b.Skip("the large kwok run needs GPUSCALE_KWOK_NODES (make bench-kwok sets it)")
	}
	nodes := envInt(b, "GPUSCALE_KWOK_NODES", 5000)
	qps := envInt(b, "GPUSCALE_KWOK_QPS", 50)
	burst := envInt(b, "GPUSCALE_KWOK_BURST", 100)
	controllerQPS := envInt(b, "GPUSCALE_KWOK_CONTROLLER_QPS", 500)
	removed := min(nodes/5, 1000)
	for i := 0; i < b.N; i++ {
		// kube-controller-manager's client runs at 20 requests a second by
		// default, so its ReplicaSet controller alone would take the
		// burst's pod count / 20 seconds to create the pods.
		c := cluster.Start(b, cluster.Options{ControllerManagerArgs: []string{
			fmt.Sprintf("--kube-api-qps=%d", controllerQPS), fmt.Sprintf("--kube-api-burst=%d", 2*controllerQPS)}})
		cfg, err := kwok.ParseConfig([]byte(fmt.Sprintf(`
provisioningDelay: 2s
nodeGroups:
- name: cpu
  minSize: 0
  maxSize: %d
  template:
    capacity: {cpu: "16", memory: 64Gi, pods: "110"}
`, nodes+nodes/10)))
		if err != nil {
			b.Fatal(err)
		}
		o := fastOptions()
		o.ScanInterval = 10 * time.Second
		o.Address = "127.0.0.1:18086"
		o.Autoscaler.ScaleDown.UnneededTime = time.Minute
		var requests atomic.Int64
		client := countingClient(b, c.Config, float32(qps), burst, &requests)
		stop := startAutoscalerWith(b, c, client, cfg, o)
		ctx := context.Background()

		start := time.Now()
		for name, n := range map[string]int{"stay": (nodes - removed) * 10, "go": removed * 10} {
			if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment(name, int32(n), 0, "1500m"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, 60*time.Minute, "every pod running", func() bool {
			return runningPods(b, c.Client, "stay")+runningPods(b, c.Client, "go") == nodes*10
		})
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all-running")
		before := len(groupNodes(b, c.Client, "cpu"))
		b.ReportMetric(float64(before), "nodes")
		b.Logf("%d pods running on %d nodes %s after the burst; %d API requests so far", nodes*10, before,
			time.Since(start).Round(time.Second), requests.Load())

		start = time.Now()
		scale, err := c.Client.AppsV1().Deployments("default").GetScale(ctx, "go", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		scale.Spec.Replicas = int32(removed * 2)
		if _, err := c.Client.AppsV1().Deployments("default").UpdateScale(ctx, "go", scale, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		want := removed * 3 / 4
		settle := 3 * (o.Autoscaler.ScaleDown.UnneededTime + o.ScanInterval)
		left, last := before, start
		waitFor(b, 60*time.Minute, fmt.Sprintf("%d nodes removed, or none for %s", want, settle), func() bool {
			if n := len(groupNodes(b, c.Client, "cpu")); n < left {
				left, last = n, time.Now()
			}
			return before-left >= want || time.Since(last) > settle
		})
		b.ReportMetric(last.Sub(start).Seconds(), "s-to-remove")
		b.ReportMetric(float64(before-left), "nodes-removed")
		b.Logf("%d of %d nodes removed, the last %s after the scale-in", before-left, removed, last.Sub(start).Round(time.Second))

		sum, count := loopDurations(b, "http://"+o.Address+"/metrics")
		if count > 0 {
			b.ReportMetric(sum/count*1000, "ms/loop")
			b.ReportMetric(count, "loops")
			b.ReportMetric(float64(requests.Load())/count, "api-requests/loop")
			b.Logf("%.0f loops of %.0f ms on average, %.1f API requests a loop", count, sum/count*1000, float64(requests.Load())/count)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
		}
		stop()
		c.Stop(b)
	}
}

// startAutoscalerWith runs the controller on client (the kwok provider
// writes its nodes with the cluster's own client) until the returned stop.
func startAutoscalerWith(b *testing.B, c *cluster.Cluster, client kubernetes.Interface, cfg *kwok.Config, o controller.Options) func() {
	b.Helper()
	p, err := kwok.New(kwok.Options{Client: c.Client, Config: cfg, Namespace: o.Namespace, Logger: o.Logger})
	if err != nil {
		b.Fatal(err)
	}
	ctrl, err := controller.New(client, p, o)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
}

// countingClient is a client of cfg at the given rate that counts every
// request it sends.
func countingClient(b *testing.B, cfg *rest.Config, qps float32, burst int, n *atomic.Int64) kubernetes.Interface {
	b.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// envInt reads a positive integer from the environment, def when unset.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s: want a positive integer, got %q", name, v)
	}
	return n
}

// waitFor polls cond every two seconds until it holds or timeout passes.
func waitFor(b *testing.B, timeout time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Second)
	}
}
