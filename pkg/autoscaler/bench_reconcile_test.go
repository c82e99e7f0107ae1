package autoscaler_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/internal/benchcluster"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// unreconciled gives every group of the mixed cluster an instance list
// and a target above its nodes, as a restart in the middle of scale-ups
// finds them: each lists its registered nodes' instances and asks for 20
// more. Even groups (in id order) asked a minute ago: 10 instances are
// booting and 10 slots hold none yet, all upcoming. Odd groups asked an
// hour ago: 5 instances never registered and 5 slots never filled; their
// requests time out (backoff, the empty slots given back) and the stuck
// instances are deleted.
func unreconciled(b *testing.B, s *snapshot.Snapshot) {
	for k, g := range s.NodeGroups() {
		ng := *g
		for _, ni := range s.NodesInGroup(g.ID) {
			ng.Instances = append(ng.Instances, snapshot.Instance{ProviderID: ni.Node.Spec.ProviderID, CreatedAt: t0.Add(-24 * time.Hour)})
		}
		stuck, created := 10, t0.Add(-time.Minute)
		if k%2 == 1 {
			stuck, created = 5, t0.Add(-time.Hour)
		}
		for i := range stuck {
			ng.Instances = append(ng.Instances, snapshot.Instance{ProviderID: fmt.Sprintf("%s%s-new-%d", benchcluster.ProviderIDPrefix, g.ID, i),
				State: snapshot.InstanceRunning, CreatedAt: created})
		}
		ng.InstancesListed = true
		ng.TargetSize += 2 * stuck
		ng.MaxSize += 2 * stuck
		if err := s.SetNodeGroup(ng); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepMixed5000NodesReconciling is BenchmarkStepMixed5000Nodes on
// the groups of unreconciled. Every loop reconciles them: 11 requests, the
// 5 hour-old ones timing out (backoff, 25 empty slots given back, 25
// stuck instances deleted; the benchmark does not carry the actions out,
// so each loop finds them again), and the 100 upcoming nodes of the others
// simulated, before both halves plan as before. The needs-nodes and
// both-halves loops run on one autoscaler, as BenchmarkStepMixed5000Nodes
// does; restart/ runs the first loop of a fresh autoscaler each time, which
// also starts with cold working memory and no unneeded history.
func BenchmarkStepMixed5000NodesReconciling(b *testing.B) {
	s, err := benchcluster.Mixed(5000, 30)
	if err != nil {
		b.Fatal(err)
	}
	unreconciled(b, s)
	small := make([]*v1.Pod, 1000)
	for i := range small {
		small[i] = benchcluster.Owned(builder.Pod("small-"+itoa(i)).CPU("100m").Memory("128Mi").Label("app", "small").Build(), "small")
	}
	o := autoscaler.DefaultOptions()
	o.ScaleUp.Expander = "least-waste"
	for _, bc := range []struct {
		name    string
		pending []*v1.Pod
		fresh   bool
	}{
		{"needs-nodes", benchcluster.Pending(1000), false}, {"both-halves", small, false},
		{"restart/needs-nodes", benchcluster.Pending(1000), true}, {"restart/both-halves", small, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := autoscaler.New(o)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var plan autoscaler.Plan
			for i := 0; i < b.N; i++ {
				if bc.fresh {
					b.StopTimer()
					if a, err = autoscaler.New(o); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if plan, err = a.Step(autoscaler.Input{Now: t0, Snapshot: s, Pending: bc.pending}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			deleted, lowered := 0, 0
			for _, act := range plan.Actions {
				switch act := act.(type) {
				case autoscaler.DeleteInstances:
					deleted += len(act.ProviderIDs)
				case autoscaler.DecreaseTarget:
					lowered += act.Delta
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(deleted), "instances-deleted")
			b.ReportMetric(float64(lowered), "slots-given-back")
			b.ReportMetric(float64(len(plan.Status.ScaleUps)), "scale-ups")
		})
	}
}

// BenchmarkStatusDocument5000Nodes20000Pending measures the status
// ConfigMap at the size issue reports named: a loop's real status on the
// mixed 5,000-node cluster with 20,000 pending pods, each of its own
// Deployment (so 20,000 equivalence groups) and fitting no group, rendered
// as the controller writes it. It reports the document's bytes.
func BenchmarkStatusDocument5000Nodes20000Pending(b *testing.B) {
	s, err := benchcluster.Mixed(5000, 30)
	if err != nil {
		b.Fatal(err)
	}
	pending := make([]*v1.Pod, 20000)
	for i := range pending {
		name := fmt.Sprintf("job-%05d", i)
		p := builder.Pod(name+"-worker-0").Namespace("batch").CPU("4").Memory("16Gi").GPU(16).Toleration("nvidia.com/gpu").Label("job", name).Build()
		pending[i] = benchcluster.Owned(p, name)
	}
	o := autoscaler.DefaultOptions()
	a, err := autoscaler.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var text string
	for i := 0; i < b.N; i++ {
		plan, err := a.Step(autoscaler.Input{Now: t0, Snapshot: s, Pending: pending})
		if err != nil {
			b.Fatal(err)
		}
		_, text = status.Render(plan.Status, nil, status.DefaultRenderOptions())
	}
	b.StopTimer()
	if len(text) > status.DefaultRenderOptions().MaxBytes {
		b.Fatalf("document is %d bytes, over %d", len(text), status.DefaultRenderOptions().MaxBytes)
	}
	b.ReportMetric(float64(len(text)), "doc-bytes")
}
