package hpa

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkLoadChangeToDecision measures how long a load change on the
// walkthrough's pod takes to become the HPA's new desired replica count,
// stage by stage: dcgm-sim reports it (exporter), Prometheus has scraped it
// (scrape), the adapter serves it (adapter), the HPA controller wants the
// new count (hpa). Each iteration is one scale-up (load 0 -> 100, 1 -> 2
// replicas) and one scale-down (100 -> 0, 2 -> 1, downscale stabilization
// 0s so the HPA's own sync is what is measured), each change made at a
// random phase of the HPA's 5 s sync period. Reported: the mean time
// since the change at which each stage was reached, in ms, for up and down
// (polled every 50 ms). With a 2 s scrape interval and the 5 s HPA sync
// period, expect scrape within 2 s (1 s on average) and hpa within 7 s
// (about 3.5 s on average):
//
//	go test -run '^$' -bench LoadChangeToDecision -benchtime 10x ./test/e2e/hpa/
//
// hpaSyncPeriod is kube-controller-manager's
// --horizontal-pod-autoscaler-sync-period in test/e2e/cluster.
const hpaSyncPeriod = 5 * time.Second

func BenchmarkLoadChangeToDecision(b *testing.B) {
	e := newEnv(b, envOptions{
		GPUNodes: 2, GPUsPerNode: 1, ScrapeInterval: scrapeInterval,
		ControllerManagerArgs: []string{"--horizontal-pod-autoscaler-downscale-stabilization=0s"},
	})
	e.startAdapter(b, "../../../examples/metrics-adapter/gpu-utilization-values.yaml")

	ctx := context.Background()
	dep, hpa := walkthroughObjects(b, metav1.NamespaceDefault, "gpu-hpa-test")
	createDeployment(ctx, b, e, dep)
	runningPods(ctx, b, e, dep.Namespace, dep.Name, 1, time.Minute)
	createHPA(ctx, b, e, hpa)
	waitHPA(ctx, b, e, hpa.Namespace, hpa.Name, time.Minute, "0/30 with 1 replica",
		func(s hpaState) bool { return averageIs(s, 0) && s.Current == 1 })

	sums := map[string]time.Duration{}
	var names []string
	runs := 0
	for b.Loop() {
		// The pod that stays when the Deployment shrinks back carries the load.
		pod := runningPods(ctx, b, e, dep.Namespace, dep.Name, 1, time.Minute)[0]
		for _, step := range []struct {
			dir     string
			util    int
			desired int32
		}{{"up", 100, 2}, {"down", 0, 1}} {
			// The previous step ended just after an HPA sync: change the load
			// at a random phase of the sync period, as a user would.
			time.Sleep(rand.N(hpaSyncPeriod))
			stepCtx, cancel := context.WithTimeout(ctx, time.Minute)
			st := trackStages(stepCtx, time.Now(), loadChangeStages(b, e, dep.Namespace, pod, hpa.Name, float64(step.util), step.desired))
			setLoad(ctx, b, e, dep.Namespace, pod, step.util)
			st.wait()
			cancel()
			if len(st.at) != len(st.names) {
				b.Fatalf("load change %s not through every stage in a minute:\n%s", step.dir, st.report())
			}
			b.Logf("%s #%d:\n%s", step.dir, runs+1, st.report())
			for _, n := range st.names {
				key := step.dir + "-" + n + "-ms"
				if _, ok := sums[key]; !ok {
					names = append(names, key)
				}
				sums[key] += st.at[n]
			}
			waitHPA(ctx, b, e, hpa.Namespace, hpa.Name, time.Minute, "the new replica count",
				func(s hpaState) bool { return s.Current == step.desired })
			runningPods(ctx, b, e, dep.Namespace, dep.Name, int(step.desired), time.Minute)
		}
		runs++
	}
	for _, k := range names {
		b.ReportMetric(ms(sums[k]/time.Duration(runs)), k)
	}
	b.Logf("stages reported: %s", strings.Join(names, ", "))
}
