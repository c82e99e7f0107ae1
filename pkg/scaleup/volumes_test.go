package scaleup_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// zonalGroup is a one-GPU group whose template is in zone.
func zonalGroup(name, zone string) *builder.GroupBuilder {
	t := gpuTemplate(name+"-t", 1)
	t.Labels[v1.LabelTopologyZone] = zone
	return builder.NodeGroup(name).Template(t)
}

// boundClaim stores claim bound to a volume pinned to zone by node affinity,
// as every zonal CSI driver provisions them (no legacy zone label).
func (w *world) boundClaim(claim, zone string) *world {
	w.t.Helper()
	pv := "pv-" + claim
	if err := w.snap.SetPersistentVolume(builder.Volume(pv).Zone(v1.LabelTopologyZone, zone).Build()); err != nil {
		w.t.Fatal(err)
	}
	if err := w.snap.SetPersistentVolumeClaim(builder.VolumeClaim(claim).BoundTo(pv).Build()); err != nil {
		w.t.Fatal(err)
	}
	return w
}

// Story: a pending pod whose volume is in zone a, and only a zone-b group
// could take it. kube-scheduler would refuse every zone-b node, so no node
// may be bought; the pod's reason names the volume and its zone.
func TestVolumeInOtherZoneBuysNothing(t *testing.T) {
	w := newWorld(t).group(zonalGroup("gpu-b", "b")).boundClaim("data-0", "a")
	plan := w.plan(opts("random"), t0, builder.Pod("train-0").CPU("2").GPU(1).Toleration("nvidia.com/gpu").Claim("data-0").Build())
	if got := summary(plan); got != "" {
		t.Fatalf("scale-ups = %q, want none", got)
	}
	msg := pendingMessages(plan)
	for _, want := range []string{"node group gpu-b", "volume data-0", "PersistentVolume pv-data-0", "topology.kubernetes.io/zone in [a]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("pending message %q does not contain %q", msg, want)
		}
	}
}

// Story: with groups in both zones (zone b cheaper), the volume's zone wins.
func TestVolumeZoneChoosesTheGroup(t *testing.T) {
	w := newWorld(t).
		group(zonalGroup("gpu-a", "a").Price(3)).
		group(zonalGroup("gpu-b", "b").Price(1)).
		boundClaim("data-0", "a")
	plan := w.plan(opts("price"), t0, builder.Pod("train-0").CPU("2").GPU(1).Toleration("nvidia.com/gpu").Claim("data-0").Build())
	if got := summary(plan); got != "gpu-a+1" {
		t.Fatalf("scale-ups = %q, want gpu-a+1", got)
	}
}

// A claim of an Immediate class that is not bound yet waits for its
// volume: kube-scheduler leaves the pod unschedulable, so no node helps.
func TestUnboundImmediateClaimTriggersNothing(t *testing.T) {
	w := newWorld(t).group(zonalGroup("gpu-a", "a"))
	if err := w.snap.SetStorageClass(builder.StorageClass("gp3").Build()); err != nil {
		t.Fatal(err)
	}
	if err := w.snap.SetPersistentVolumeClaim(builder.VolumeClaim("data-0").Class("gp3").Build()); err != nil {
		t.Fatal(err)
	}
	plan := w.plan(opts("random"), t0, builder.Pod("train-0").CPU("2").GPU(1).Toleration("nvidia.com/gpu").Claim("data-0").Build())
	if got := summary(plan); got != "" {
		t.Fatalf("scale-ups = %q, want none", got)
	}
	if msg := pendingMessages(plan); !strings.Contains(msg, "PersistentVolumeClaim default/data-0 is not bound yet") {
		t.Errorf("pending message %q does not say the claim is unbound", msg)
	}
}

// Two replicas of one owner whose claims are bound in different zones are
// not interchangeable: each gets a node in its own volume's zone.
func TestReplicasWithVolumesInTwoZones(t *testing.T) {
	w := newWorld(t).group(zonalGroup("gpu-a", "a")).group(zonalGroup("gpu-b", "b")).
		boundClaim("data-web-0", "a").boundClaim("data-web-1", "b")
	pods := []*v1.Pod{
		owned(builder.Pod("web-0").CPU("2").GPU(1).Toleration("nvidia.com/gpu").Claim("data-web-0").Build(), "web"),
		owned(builder.Pod("web-1").CPU("2").GPU(1).Toleration("nvidia.com/gpu").Claim("data-web-1").Build(), "web"),
	}
	// The volumes carry the same name in both pods, as a StatefulSet's do.
	for _, p := range pods {
		p.Spec.Volumes[0].Name = "data"
	}
	if got := w.twoLoops(pods...); got != "gpu-a+1 gpu-b+1" {
		t.Fatalf("scale-ups over two loops = %q, want gpu-a+1 gpu-b+1", got)
	}
}

// twoLoops plans, applies, and plans again (one group is chosen per loop),
// and returns both loops' scale-ups sorted.
func (w *world) twoLoops(pods ...*v1.Pod) string {
	first := w.plan(opts("random"), t0, pods...)
	w.apply(first, t0)
	second := w.plan(opts("random"), t0.Add(time.Second), pods...)
	all := strings.Fields(summary(first) + " " + summary(second))
	sort.Strings(all)
	return strings.Join(all, " ")
}

// Replicas with generic ephemeral volumes: claims made for each pod and
// bound in different zones keep the pods apart; claims not made yet are
// alike and the pods share a class.
func TestReplicasWithEphemeralVolumes(t *testing.T) {
	w := newWorld(t).group(zonalGroup("gpu-a", "a")).group(zonalGroup("gpu-b", "b"))
	if err := w.snap.SetStorageClass(builder.StorageClass("wffc").WaitForFirstConsumer().Build()); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *v1.Pod {
		return owned(builder.Pod(name).CPU("2").GPU(1).Toleration("nvidia.com/gpu").EphemeralVolume("scratch", "wffc").Build(), "web")
	}
	if got := summary(w.plan(opts("random"), t0, pod("web-0"), pod("web-1"))); got != "gpu-a+2" && got != "gpu-b+2" {
		t.Fatalf("claims not made yet: scale-ups = %q, want two nodes of one group", got)
	}
	pods := []*v1.Pod{pod("web-0"), pod("web-1")}
	for i, zone := range []string{"a", "b"} {
		p := pods[i]
		claim := builder.VolumeClaim(p.Name + "-scratch").Class("wffc").BoundTo("pv-" + p.Name).Build()
		claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptrTo(true)}}
		if err := w.snap.SetPersistentVolume(builder.Volume("pv-"+p.Name).Zone(v1.LabelTopologyZone, zone).Build()); err != nil {
			t.Fatal(err)
		}
		if err := w.snap.SetPersistentVolumeClaim(claim); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.twoLoops(pods...); got != "gpu-a+1 gpu-b+1" {
		t.Fatalf("claims bound in two zones: scale-ups over two loops = %q, want gpu-a+1 gpu-b+1", got)
	}
}

func ptrTo[T any](v T) *T { return &v }
