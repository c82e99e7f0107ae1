package scaleup_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

// zonalGPUWorld has three similar one-GPU groups, gpu-a, gpu-b and gpu-c,
// one zone each.
func zonalGPUWorld(t *testing.T) *world {
	w := newWorld(t)
	for _, z := range []string{"a", "b", "c"} {
		tmpl := gpuTemplate("t-"+z, 1)
		tmpl.Labels[v1.LabelTopologyZone] = "us-east-1" + z
		tmpl.Labels[v1.LabelFailureDomainBetaZone] = "us-east-1" + z
		w.group(builder.NodeGroup("gpu-" + z).Max(10).Template(tmpl))
	}
	return w
}

// coScheduled are n GPU pods that require each other in one zone.
func coScheduled(n int, key string) []*v1.Pod {
	return replicas(n, func(i int) *v1.Pod {
		return owned(builder.Pod(fmt.Sprintf("worker-%d", i)).CPU("2").Memory("8Gi").GPU(1).Toleration("nvidia.com/gpu").
			Label("job", "allreduce").Affinity(key, "job", "allreduce").Build(), "allreduce")
	})
}

func balancing(expander string) scaleup.Options {
	o := opts(expander)
	o.BalanceSimilarNodeGroups = true
	return o
}

// Story: three GPU pods with required pod affinity to each other on
// topology.kubernetes.io/zone. Balancing used to give each zone one node,
// where only the first pod could run; they must all land in one zone.
func TestCoScheduledZonalPodsStayInOneZone(t *testing.T) {
	for _, key := range []string{v1.LabelTopologyZone, v1.LabelFailureDomainBetaZone} {
		t.Run(key, func(t *testing.T) {
			w := zonalGPUWorld(t)
			for seed := int64(0); seed < 6; seed++ {
				o := balancing("random")
				o.Seed = seed
				plan := w.plan(o, t0, coScheduled(3, key)...)
				if len(plan.ScaleUps) != 1 || plan.ScaleUps[0].Delta != 3 || plan.ScaleUps[0].Pods != 3 {
					t.Fatalf("seed %d: scale-ups = %q, want 3 nodes of one zone's group", seed, summary(plan))
				}
				if want := key + "=us-east-1"; !strings.Contains(plan.ScaleUps[0].Why, want) {
					t.Errorf("seed %d: why = %q, want it to name %s", seed, plan.ScaleUps[0].Why, want)
				}
				if len(plan.Triggered) != 3 || len(plan.Pending) != 0 {
					t.Errorf("seed %d: triggered %d pending %d, want 3 and 0", seed, len(plan.Triggered), len(plan.Pending))
				}
			}
		})
	}
}

// Balancing stays for pods without such a need, in the same cluster.
func TestZonalGPUGroupsStillBalanceFreePods(t *testing.T) {
	w := zonalGPUWorld(t)
	pods := replicas(3, func(i int) *v1.Pod { return owned(gpuPod(fmt.Sprintf("infer-%d", i), 1), "infer") })
	if got := summary(w.plan(balancing("least-waste"), t0, pods...)); got != "gpu-a+1 gpu-b+1 gpu-c+1" {
		t.Errorf("scale-ups = %q, want one node per zone", got)
	}
	// Affinity on the hostname packs pods on one node per group; that node
	// is not split either.
	host := coScheduled(1, v1.LabelHostname)
	if plan := w.plan(balancing("least-waste"), t0, host...); len(plan.ScaleUps) != 1 || plan.ScaleUps[0].Delta != 1 {
		t.Errorf("hostname affinity: scale-ups = %q, want one node", summary(plan))
	}
}

// Region affinity keeps the pods in one region: similar groups of the same
// region still share the nodes, groups of another region do not.
func TestRegionAffinityBalancesWithinTheRegion(t *testing.T) {
	w := newWorld(t)
	for _, g := range []struct{ name, region, zone string }{
		{"gpu-east-a", "us-east-1", "us-east-1a"}, {"gpu-east-b", "us-east-1", "us-east-1b"}, {"gpu-west-a", "us-west-2", "us-west-2a"},
	} {
		tmpl := gpuTemplate("t-"+g.name, 1)
		tmpl.Labels[v1.LabelTopologyZone] = g.zone
		tmpl.Labels[v1.LabelTopologyRegion] = g.region
		w.group(builder.NodeGroup(g.name).Max(10).Template(tmpl))
	}
	for seed := int64(0); seed < 6; seed++ {
		o := balancing("random")
		o.Seed = seed
		got := summary(w.plan(o, t0, coScheduled(4, v1.LabelTopologyRegion)...))
		if got != "gpu-east-a+2 gpu-east-b+2" && got != "gpu-west-a+4" {
			t.Errorf("seed %d: scale-ups = %q, want the east groups balanced or the west group alone", seed, got)
		}
	}
}
