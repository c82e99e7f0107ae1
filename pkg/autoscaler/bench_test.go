package autoscaler_test

import (
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
)

// BenchmarkStepMixed5000Nodes runs whole loops on the 5,000-node,
// ~140,000-pod mixed cluster (10 groups, 3 zones, CPU and GPU shapes, a tenth
// of the nodes nearly idle):
//   - needs-nodes: 1,000 pending pods of which 5% carry hostname
//     anti-affinity or zone spread; the loop scales up (scale-down waits);
//   - both-halves: 1,000 small pending pods that fit existing nodes, so the
//     loop runs scale-up's filtering and a full scale-down simulation.
func BenchmarkStepMixed5000Nodes(b *testing.B) {
	s, err := benchcluster.Mixed(5000, 30)
	if err != nil {
		b.Fatal(err)
	}
	small := make([]*v1.Pod, 1000)
	for i := range small {
		small[i] = benchcluster.Owned(builder.Pod("small-"+itoa(i)).CPU("100m").Memory("128Mi").Label("app", "small").Build(), "small")
	}
	for _, bc := range []struct {
		name    string
		pending []*v1.Pod
	}{{"needs-nodes", benchcluster.Pending(1000)}, {"both-halves", small}} {
		b.Run(bc.name, func(b *testing.B) {
			o := autoscaler.DefaultOptions()
			o.ScaleUp.Expander = "least-waste"
			a, err := autoscaler.New(o)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var plan autoscaler.Plan
			for i := 0; i < b.N; i++ {
				if plan, err = a.Step(autoscaler.Input{Now: t0, Snapshot: s, Pending: bc.pending}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(len(plan.Status.ScaleUps)), "scale-ups")
			b.ReportMetric(float64(plan.Status.Cluster.ScaleDown.Candidates), "unneeded")
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var buf [12]byte
	n := len(buf)
	for ; i > 0; i /= 10 {
		n--
		buf[n] = digits[i%10]
	}
	return string(buf[n:])
}
