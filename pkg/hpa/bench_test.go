package hpa

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkStep is one sync of an HPA over 100 pods with a CPU and a pods
// metric, some samples missing: the simulator runs one per HPA every sync
// period.
func BenchmarkStep(b *testing.B) {
	const n = 100
	ps := pods(n)
	cpu, gpu := map[string]PodMetric{}, map[string]PodMetric{}
	for i := 0; i < n-5; i++ {
		name := fmt.Sprintf("p%d", i)
		cpu[name] = PodMetric{Value: int64(400 + i), Timestamp: t0, Window: time.Minute}
		gpu[name] = PodMetric{Value: int64(40000 + 100*i)}
	}
	m, err := New(spec(1, 1000, cpuUtilization(50), podsMetric("gpu_util", "50")), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Replicas: n, StatusReplicas: n, Pods: ps, Metrics: []Reading{{Pods: cpu}, {Pods: gpu}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in.Now = t0.Add(time.Duration(i) * 15 * time.Second)
		if _, err := m.Step(in); err != nil {
			b.Fatal(err)
		}
	}
}
