package consolidation_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
)

// Story: consolidation must not move a pod away from its volume's zone.
// gpu-a (zone a) holds three pods, one of them on a volume pinned to zone
// a by node affinity; gpu-b (zone b) holds four. Emptying gpu-a is the
// cheaper disruption, but its volume pod cannot run in zone b, so gpu-b
// goes instead and its pods move to gpu-a.
func TestConsolidationKeepsVolumePodInItsZone(t *testing.T) {
	c := newCluster(t).group("a100x8", gpuNode(8, "64", "512Gi"), 32.77)
	if err := c.snap.SetPersistentVolume(builder.Volume("pv-a").Zone(v1.LabelTopologyZone, "a").Build()); err != nil {
		t.Fatal(err)
	}
	if err := c.snap.SetPersistentVolumeClaim(builder.VolumeClaim("ckpt").BoundTo("pv-a").Build()); err != nil {
		t.Fatal(err)
	}
	zonal := func(name, zone string) *v1.Node {
		n := gpuNode(8, "64", "512Gi")
		n.Name = name
		n.Labels[v1.LabelHostname] = name
		n.Labels[v1.LabelTopologyZone] = zone
		return n
	}
	volumePod := owned(builder.Pod("trainer").CPU("1").Memory("1Gi").GPU(1).Toleration("nvidia.com/gpu").Claim("ckpt"), "trainer")
	c.nodeObj(zonal("gpu-a", "a"), "a100x8", volumePod, gpuPod("a-1", 1), gpuPod("a-2", 1))
	c.nodeObj(zonal("gpu-b", "b"), "a100x8", gpuPod("b-0", 1), gpuPod("b-1", 1), gpuPod("b-2", 1), gpuPod("b-3", 1))
	p := plan(t, c, immediate(), nil)
	for _, m := range p.Moves {
		for _, ev := range m.Evict {
			if ev.Pod.Name == "trainer" && (ev.ToReplacement || ev.To != "gpu-a") {
				t.Fatalf("trainer planned onto %q (replacement %v), outside its volume's zone:%s", ev.To, ev.ToReplacement, summary(p))
			}
		}
	}
	if len(p.Moves) != 1 || p.Moves[0].Kind != consolidation.MoveDelete || moveNodes(p.Moves[0])[0] != "gpu-b" {
		t.Fatalf("want one move deleting gpu-b:%s", summary(p))
	}
}
