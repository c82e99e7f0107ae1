package scaledown_test

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// zonalVolumeCluster: node a1 (zone a) runs a pod whose claim is bound to a
// volume pinned to zone a by node affinity (as CSI drivers pin them);
// node b1 (zone b) is empty and has room. A third node in zone a is added
// when room is wanted there.
func zonalVolumeCluster(t *testing.T, roomInZoneA bool) *cluster {
	c := newCluster(t).group("pool", 0, 3)
	if err := c.snap.SetPersistentVolume(builder.Volume("pv-a").Zone(v1.LabelTopologyZone, "a").Build()); err != nil {
		t.Fatal(err)
	}
	if err := c.snap.SetPersistentVolumeClaim(builder.VolumeClaim("cache").BoundTo("pv-a").Build()); err != nil {
		t.Fatal(err)
	}
	pod := controlledBy(builder.Pod("model-cache").CPU("100m").Claim("cache").Build(), "StatefulSet", "cache")
	c.node(node4("a1").Zone("a").Build(), "pool", pod)
	c.node(node4("b1").Zone("b").Build(), "pool", rs("busy-b", "1"))
	if roomInZoneA {
		c.node(node4("a2").Zone("a").Build(), "pool", rs("busy-a", "1"))
	}
	return c
}

// Story: scale-down must not move a pod to a node its volume cannot reach.
// a1 is underused, but its pod's volume is in zone a and the only other
// node is in zone b: a1 stays, and the message names the volume's topology.
func TestVolumePodIsNotMovedOutOfItsZone(t *testing.T) {
	c := zonalVolumeCluster(t, false)
	plan := newPlanner(t, immediate()).Plan(c.input(t0))
	if got := deleted(plan); slices.Contains(got, "a1") {
		t.Fatalf("deleted %v: a1's pod would be stranded in zone b", got)
	}
	k := kept(t, plan, "a1")
	if !strings.Contains(k.Message, "PersistentVolume pv-a") || !strings.Contains(k.Message, "topology.kubernetes.io/zone in [a]") {
		t.Errorf("kept message %q does not name the volume and its zone", k.Message)
	}
}

// With room in zone a, the pod moves there.
func TestVolumePodMovesWithinItsZone(t *testing.T) {
	c := zonalVolumeCluster(t, true)
	plan := newPlanner(t, immediate()).Plan(c.input(t0))
	r := removal(t, plan, "a1")
	if got := evictions(r); !slices.Equal(got, []string{"model-cache->a2"}) {
		t.Errorf("moves %v, want model-cache->a2", got)
	}
}

// A pod on a ReadWriteOncePod claim is the claim's one user: it may still
// move, its own use does not count against it.
func TestReadWriteOncePodPodMoves(t *testing.T) {
	c := zonalVolumeCluster(t, true)
	claim := c.snap.PersistentVolumeClaim("default", "cache").DeepCopy()
	claim.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	if err := c.snap.SetPersistentVolumeClaim(claim); err != nil {
		t.Fatal(err)
	}
	plan := newPlanner(t, immediate()).Plan(c.input(t0))
	if got := evictions(removal(t, plan, "a1")); !slices.Equal(got, []string{"model-cache->a2"}) {
		t.Errorf("moves %v, want model-cache->a2", got)
	}
}

// Story: scale-down must not move a pod to a node that cannot attach its
// volume. a1's pod uses a CSI volume; a2 (same zone, room to spare) already
// attaches one volume of the same driver. With an attach limit of 1 on a2,
// a1 stays and the message names the driver and the count; with 2, the pod
// moves.
func TestVolumePodIsNotMovedToANodeAtItsAttachLimit(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	for _, limit := range []int32{1, 2} {
		c := zonalVolumeCluster(t, true)
		pv := c.snap.PersistentVolume("pv-a").DeepCopy()
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: ebs, VolumeHandle: "vol-a"}
		must(t, c.snap.SetPersistentVolume(pv))
		must(t, c.snap.SetPersistentVolume(builder.Volume("pv-logs").CSI(ebs, "vol-logs").Build()))
		must(t, c.snap.SetPersistentVolumeClaim(builder.VolumeClaim("logs").BoundTo("pv-logs").Build()))
		must(t, c.snap.AddPod(controlledBy(builder.Pod("logger").CPU("100m").Claim("logs").OnNode("a2").Build(), "StatefulSet", "logs")))
		must(t, c.snap.SetCSINode(builder.CSINode("a2").Driver(ebs, limit).Build()))
		plan := newPlanner(t, immediate()).Plan(c.input(t0))
		if limit == 2 {
			if got := evictions(removal(t, plan, "a1")); !slices.Equal(got, []string{"model-cache->a2"}) {
				t.Errorf("limit 2: moves %v, want model-cache->a2", got)
			}
			continue
		}
		if got := deleted(plan); slices.Contains(got, "a1") {
			t.Fatalf("limit 1: deleted %v: a2 cannot attach a1's volume", got)
		}
		if k := kept(t, plan, "a1"); !strings.Contains(k.Message, "1 of 1 ebs.csi.aws.com volumes attached") {
			t.Errorf("limit 1: kept message %q does not name the driver and its limit", k.Message)
		}
	}
}
