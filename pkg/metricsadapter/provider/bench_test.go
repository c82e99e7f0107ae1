package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkGetMetricBySelector1000Pods measures one HPA-style request
// (pods/*/gpu_utilization over 1,000 pods) through the adapter's own path:
// listing, query rendering, the HTTP round trip to a stand-in Prometheus,
// decoding and building the list. The stand-in answers with a fixed reply
// shaped as Prometheus's answer to the seed rule (one exported_pod label
// per sample), so the figures are the adapter's; a real Prometheus adds
// its evaluation.
func BenchmarkGetMetricBySelector1000Pods(b *testing.B) {
	pods := fakeLister{"default": {}}
	f := newFixture(b, pods, 5*time.Second)
	var reply strings.Builder
	reply.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("gpu-hpa-test-7c6b78785c-%04d", i)
		pods["default"][name] = labels.Set{"app": "gpu-hpa-test"}
		if i == 0 {
			f.prom.Add(gpuSample("default", name, "0", 1, t0))
		} else {
			reply.WriteByte(',')
		}
		fmt.Fprintf(&reply, `{"metric":{"exported_pod":%q},"value":[%d.%03d,"%v"]}`, name, t0.Unix(), i%1000, float64(i%101)/2)
	}
	reply.WriteString(`]}}`)
	if err := f.p.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	f.prom.SetQueryReply([]byte(reply.String()))
	sel := labels.SelectorFromSet(labels.Set{"app": "gpu-hpa-test"})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		list, err := f.p.GetMetricBySelector(context.Background(), "default", sel, gpuUtilInfo, labels.Everything())
		if err != nil || len(list.Items) != 1000 {
			b.Fatalf("got %v items, err %v", len(list.Items), err)
		}
	}
}
