package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkGetMetricBySelector1000Pods measures one HPA-style request
// (pods/*/gpu_utilization over 1,000 pods) through the adapter's own path:
// listing, query rendering, the HTTP round trip to a stand-in Prometheus,
// decoding and building the list. A real Prometheus adds its evaluation.
func BenchmarkGetMetricBySelector1000Pods(b *testing.B) {
	pods := fakeLister{"default": {}}
	f := newFixture(b, pods, 5*time.Second)
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("gpu-hpa-test-%04d", i)
		pods["default"][name] = labels.Set{"app": "gpu-hpa-test"}
		f.prom.Add(gpuSample("default", name, fmt.Sprint(i%8), float64(i%101), t0))
	}
	if err := f.p.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "gpu-hpa-test"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		list, err := f.p.GetMetricBySelector(context.Background(), "default", sel, gpuUtilInfo, labels.Everything())
		if err != nil || len(list.Items) != 1000 {
			b.Fatalf("got %v items, err %v", len(list.Items), err)
		}
	}
}
