package consolidation_test

import (
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// TestRandomClustersStaySafe plans random clusters (GPU and CPU groups at
// several prices, a spot group, pods of many sizes, some with hostname
// anti-affinity, host ports, PodDisruptionBudgets or do-not-disrupt) with
// budgets lifted and no stable time, and carries each plan out on a copy of
// the snapshot (checkSafe): every evicted pod must fit where the plan sends
// it, and none may be sent to a node the plan removes.
func TestRandomClustersStaySafe(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			c := randomCluster(t, rng)
			o := immediate()
			o.SpotReplacements = rng.Intn(2) == 0
			o.MinSavings = []float64{0, 0.2}[rng.Intn(2)]
			p := plan(t, c, o, nil)
			if testing.Verbose() {
				t.Logf("%d moves:%s", len(p.Moves), summary(p))
			}
		})
	}
}

func randomCluster(t *testing.T, rng *rand.Rand) *cluster {
	c := newCluster(t).
		group("a100x8", gpuNode(8, "64", "512Gi"), 32.77).
		group("a100x4", gpuNode(4, "32", "256Gi"), 16.4).
		group("a100x1", gpuNode(1, "8", "64Gi"), 4.10).
		group("a100x4-spot", gpuNode(4, "32", "256Gi"), 6, func(b *builder.GroupBuilder) { b.Spot() }).
		group("cpu-16", cpuNode("16", "64Gi"), 0.77).
		group("cpu-32", cpuNode("32", "128Gi"), 1.54)
	c.pdb("guarded", int32(rng.Intn(3)), "guarded")
	groups := []string{"a100x8", "a100x4", "a100x1", "cpu-16", "cpu-32"}
	nodes := 4 + rng.Intn(10)
	pod := 0
	for n := 0; n < nodes; n++ {
		g := groups[rng.Intn(len(groups))]
		name := fmt.Sprintf("%s-%d", g, n)
		tmpl := c.snap.NodeGroup(g).Template
		gpus := tmpl.Status.Allocatable.Name("nvidia.com/gpu", "").Value()
		cpu := tmpl.Status.Allocatable.Cpu().Value()
		var pods []*v1.Pod
		usedGPU, usedCPU := int64(0), int64(0)
		solo, port := false, false
		for k := rng.Intn(6); k > 0; k-- {
			pod++
			pname := fmt.Sprintf("p%d", pod)
			var p *v1.Pod
			if gpus > 0 && rng.Intn(3) > 0 {
				want := int64(1 + rng.Intn(2))
				if usedGPU+want > gpus || usedCPU+1 > cpu {
					continue
				}
				usedGPU += want
				usedCPU++
				p = gpuPod(pname, want)
			} else {
				want := int64(1 + rng.Intn(4))
				if usedCPU+want > cpu {
					continue
				}
				usedCPU += want
				p = cpuPod(pname, fmt.Sprint(want))
			}
			switch rng.Intn(8) {
			case 0:
				p.Labels["app"] = "guarded"
			case 1:
				p.Annotations = map[string]string{drain.AnnotationDoNotDisrupt: "true"}
			case 2:
				if solo {
					continue // one a node, as the scheduler would have it
				}
				solo = true
				p.Labels["app"] = "solo"
				p.Spec.Affinity = builder.Pod("x").AntiAffinity(v1.LabelHostname, "app", "solo").Build().Spec.Affinity
			case 3:
				if port {
					continue
				}
				port = true
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
			}
			pods = append(pods, p)
		}
		c.node(name, g, pods...)
	}
	return c
}
