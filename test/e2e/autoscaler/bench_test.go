package autoscaler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// BenchmarkE2E1000PendingPods: a Deployment of 1,000 pods lands on an empty
// group of 16-cpu kwok nodes (ten pods a node: 100 nodes). It reports the
// time until every pod runs, the nodes added and the loop durations from the
// autoscaler's own histogram. Run with
//
//	go test -run '^$' -bench E2E -benchtime 1x ./test/e2e/autoscaler/
func BenchmarkE2E1000PendingPods(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := cluster.Start(b, cluster.Options{})
		cfg, err := kwok.ParseConfig([]byte(`
provisioningDelay: 2s
nodeGroups:
- name: cpu
  minSize: 0
  maxSize: 150
  template:
    capacity: {cpu: "16", memory: 64Gi, pods: "110"}
`))
		if err != nil {
			b.Fatal(err)
		}
		o := fastOptions()
		o.Address = "127.0.0.1:18085"
		o.Autoscaler.ScaleDown.UnneededTime = 10 * time.Minute
		r := c.StartAutoscaler(b, cfg, o)
		ctx := context.Background()
		start := time.Now()
		if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("load", 1000, 0, "1500m"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for runningPods(b, c.Client, "load") < 1000 {
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("only %d of 1000 pods running after 10 minutes", runningPods(b, c.Client, "load"))
			}
			time.Sleep(time.Second)
		}
		elapsed := time.Since(start)
		nodes := len(groupNodes(b, c.Client, "cpu"))
		b.ReportMetric(elapsed.Seconds(), "s-to-all-running")
		b.ReportMetric(float64(nodes), "nodes")
		sum, count := loopDurations(b, "http://127.0.0.1:18085/metrics")
		if count > 0 {
			b.ReportMetric(sum/count*1000, "ms/loop")
			b.ReportMetric(count, "loops")
		}
		r.Stop()
		c.Stop(b)
	}
}

// loopDurations reads the main loop's histogram sum and count.
func loopDurations(b *testing.B, url string) (sum, count float64) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	text, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, `cluster_autoscaler_function_duration_seconds_sum{function="main"}`):
			_, _ = fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &sum)
		case strings.HasPrefix(line, `cluster_autoscaler_function_duration_seconds_count{function="main"}`):
			_, _ = fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &count)
		}
	}
	return sum, count
}
