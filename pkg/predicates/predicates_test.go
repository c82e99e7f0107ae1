package predicates_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

const zone = v1.LabelTopologyZone

type cluster struct {
	nodes []*v1.Node
	pods  []*v1.Pod
	setup func(*snapshot.Snapshot)
}

func (c cluster) build(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	for _, n := range c.nodes {
		if err := s.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.pods {
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	if c.setup != nil {
		c.setup(s)
	}
	return s
}

// TestPredicates checks each rule in both directions on node "target".
func TestPredicates(t *testing.T) {
	gpuNode := func() *builder.NodeBuilder { return builder.Node("target").Zone("a").GPU(1) }
	twoZones := []*v1.Node{builder.Node("target").Zone("a").Build(), builder.Node("other").Zone("b").Build()}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	volumes := func(pvZone string) func(*snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			_ = s.SetPersistentVolume(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Labels: map[string]string{zone: pvZone}}})
			_ = s.SetPersistentVolumeClaim(builder.VolumeClaim("data").BoundTo("pv1").Build())
			class := "late"
			_ = s.SetPersistentVolumeClaim(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"},
				Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class}})
			_ = s.SetStorageClass(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Provisioner: "pd.csi.storage.gke.io", VolumeBindingMode: &wffc})
		}
	}
	cases := []struct {
		name    string
		cluster cluster
		pod     *v1.Pod
		want    predicates.Predicate
		message string
	}{
		{"gpu pod fits a node with a free gpu", cluster{nodes: []*v1.Node{gpuNode().Build()}},
			builder.Pod("p").GPU(1).Build(), predicates.Fits, "fits"},
		{"gpu pod on a node without gpus", cluster{nodes: []*v1.Node{builder.Node("target").Build()}},
			builder.Pod("p").GPU(2).Build(), predicates.NodeResourcesFit, "Insufficient nvidia.com/gpu (wants 2, node has 0)"},
		{"gpu already taken", cluster{nodes: []*v1.Node{gpuNode().Build()}, pods: []*v1.Pod{builder.Pod("q").GPU(1).OnNode("target").Build()}},
			builder.Pod("p").GPU(1).Build(), predicates.NodeResourcesFit, "Insufficient nvidia.com/gpu (wants 1, node has 0 free of 1)"},
		{"MIG profile missing", cluster{nodes: []*v1.Node{gpuNode().Allocatable("nvidia.com/mig-1g.10gb", "7").Build()}},
			builder.Pod("p").Request("nvidia.com/mig-3g.40gb", "1").Build(), predicates.NodeResourcesFit, "Insufficient nvidia.com/mig-3g.40gb"},
		{"MIG profile present", cluster{nodes: []*v1.Node{gpuNode().Allocatable("nvidia.com/mig-1g.10gb", "7").Build()}},
			builder.Pod("p").Request("nvidia.com/mig-1g.10gb", "7").Build(), predicates.Fits, "fits"},
		{"cpu short", cluster{nodes: []*v1.Node{builder.Node("target").CPU("2").Build()}, pods: []*v1.Pod{builder.Pod("q").CPU("1500m").OnNode("target").Build()}},
			builder.Pod("p").CPU("1").Build(), predicates.NodeResourcesFit, "Insufficient cpu (wants 1, node has 500m free of 2)"},
		{"init container larger than node", cluster{nodes: []*v1.Node{builder.Node("target").CPU("2").Build()}},
			builder.Pod("p").CPU("1").InitContainer(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Build(), predicates.NodeResourcesFit, "Insufficient cpu"},
		{"pod count full", cluster{nodes: []*v1.Node{builder.Node("target").Pods(1).Build()}, pods: []*v1.Pod{builder.Pod("q").OnNode("target").Build()}},
			builder.Pod("p").Build(), predicates.NodeResourcesFit, "Too many pods (node has 1 of 1)"},
		{"untolerated NoSchedule taint", cluster{nodes: []*v1.Node{gpuNode().Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()}},
			builder.Pod("p").GPU(1).Build(), predicates.TaintToleration, "taint nvidia.com/gpu=present:NoSchedule"},
		{"tolerated taint", cluster{nodes: []*v1.Node{gpuNode().Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()}},
			builder.Pod("p").GPU(1).Toleration("nvidia.com/gpu").Build(), predicates.Fits, "fits"},
		{"PreferNoSchedule never filters", cluster{nodes: []*v1.Node{builder.Node("target").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Build()}},
			builder.Pod("p").Build(), predicates.Fits, "fits"},
		{"node selector mismatch", cluster{nodes: []*v1.Node{gpuNode().Build()}},
			builder.Pod("p").NodeSelector("accelerator", "a100").Build(), predicates.NodeAffinity, "node selector"},
		{"required node affinity match", cluster{nodes: []*v1.Node{gpuNode().Build()}},
			builder.Pod("p").RequireNodeLabelIn(zone, "b", "a").Build(), predicates.Fits, "fits"},
		{"cordoned node", cluster{nodes: []*v1.Node{builder.Node("target").Unschedulable().Build()}},
			builder.Pod("p").Build(), predicates.NodeUnschedulable, "node is marked unschedulable"},
		{"cordoned node tolerated", cluster{nodes: []*v1.Node{builder.Node("target").Unschedulable().Build()}},
			builder.Pod("p").Toleration(v1.TaintNodeUnschedulable).Build(), predicates.Fits, "fits"},
		{"host port taken", cluster{nodes: []*v1.Node{builder.Node("target").Build()}, pods: []*v1.Pod{builder.Pod("q").HostPort(9400).OnNode("target").Build()}},
			builder.Pod("p").HostPort(9400).Build(), predicates.NodePorts, "host port TCP/9400"},
		{"anti-affinity to a pod in the zone", cluster{nodes: twoZones, pods: []*v1.Pod{builder.Pod("q").Label("app", "web").OnNode("other").Build(),
			builder.Pod("r").Label("app", "web").OnNode("target").Build()}},
			builder.Pod("p").AntiAffinity(zone, "app", "web").Build(), predicates.InterPodAffinity, "required anti-affinity"},
		{"existing pod's anti-affinity excludes the newcomer", cluster{nodes: twoZones,
			pods: []*v1.Pod{builder.Pod("q").AntiAffinity(zone, "app", "web").OnNode("target").Build()}},
			builder.Pod("p").Label("app", "web").Build(), predicates.InterPodAffinity, "excludes this pod"},
		{"affinity with no matching pod anywhere and not self-matching", cluster{nodes: twoZones},
			builder.Pod("p").Affinity(zone, "app", "db").Build(), predicates.InterPodAffinity, "required affinity"},
		{"self-affine first pod may start the group", cluster{nodes: twoZones},
			builder.Pod("p").Label("app", "db").Affinity(zone, "app", "db").Build(), predicates.Fits, "fits"},
		{"affinity satisfied only in the other zone", cluster{nodes: twoZones, pods: []*v1.Pod{builder.Pod("q").Label("app", "db").OnNode("other").Build()}},
			builder.Pod("p").Label("app", "db").Affinity(zone, "app", "db").Build(), predicates.InterPodAffinity, "required affinity"},
		{"spread skew exceeded", cluster{nodes: twoZones, pods: []*v1.Pod{builder.Pod("q").Label("app", "web").OnNode("target").Build()}},
			builder.Pod("p").Label("app", "web").Spread(zone, 1, "app", "web").Build(), predicates.PodTopologySpread, "skew 2, over maxSkew 1"},
		{"spread to the emptier zone", cluster{nodes: twoZones, pods: []*v1.Pod{builder.Pod("q").Label("app", "web").OnNode("other").Build()}},
			builder.Pod("p").Label("app", "web").Spread(zone, 1, "app", "web").Build(), predicates.Fits, "fits"},
		{"spread key missing on node", cluster{nodes: []*v1.Node{builder.Node("target").Build()}},
			builder.Pod("p").Spread(zone, 1, "app", "web").Build(), predicates.PodTopologySpread, "lacks label topology.kubernetes.io/zone"},
		{"volume in another zone", cluster{nodes: twoZones, setup: volumes("b")},
			builder.Pod("p").Claim("data").Build(), predicates.VolumeZone, "topology of volume pv1"},
		{"volume in the node's zone", cluster{nodes: twoZones, setup: volumes("a__c")},
			builder.Pod("p").Claim("data").Build(), predicates.Fits, "fits"},
		{"claim bound at first consumer", cluster{nodes: twoZones, setup: volumes("b")},
			builder.Pod("p").Claim("unbound").Build(), predicates.Fits, "fits"},
		{"missing claim", cluster{nodes: twoZones, setup: volumes("a")},
			builder.Pod("p").Claim("ghost").Build(), predicates.VolumeRestrictions, "volume ghost: PersistentVolumeClaim default/ghost not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cluster.build(t)
			pc, err := predicates.New(s).Prepare(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			r := pc.Check(s.Node("target"))
			if r.Predicate != tc.want {
				t.Fatalf("predicate = %v (%s), want %v", r.Predicate, r, tc.want)
			}
			if !strings.Contains(r.String(), tc.message) {
				t.Errorf("message %q does not contain %q", r.String(), tc.message)
			}
			// Scans pass over the nodes LacksRoom names without Check:
			// it must name only nodes Check refuses, and every node
			// refused for its resources.
			lacks := pc.LacksRoom(s.Node("target"))
			if lacks && r.Fits() || r.Predicate == predicates.NodeResourcesFit && !lacks {
				t.Errorf("LacksRoom = %v for a node Check answers %q", lacks, r)
			}
		})
	}
}

func TestTemplateWording(t *testing.T) {
	s := snapshot.New()
	_ = s.AddNode(builder.Node("gpu-a10-template").GPU(1).Build())
	pc, _ := predicates.New(s).Prepare(builder.Pod("p").GPU(2).Build())
	got := "node group gpu-a10: " + pc.Check(s.Node("gpu-a10-template")).Message("template")
	want := "node group gpu-a10: Insufficient nvidia.com/gpu (wants 2, template has 1)"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCheckFollowsSnapshotChanges: state computed for one snapshot
// generation must not be reused after the snapshot changes.
func TestCheckFollowsSnapshotChanges(t *testing.T) {
	s := snapshot.New()
	_ = s.AddNode(builder.Node("n1").Zone("a").Build())
	_ = s.AddNode(builder.Node("n2").Zone("b").Build())
	pc, err := predicates.New(s).Prepare(builder.Pod("p").Label("app", "web").AntiAffinity(zone, "app", "web").Build())
	if err != nil {
		t.Fatal(err)
	}
	if r := pc.Check(s.Node("n1")); !r.Fits() {
		t.Fatalf("empty zone refused: %s", r)
	}
	s.Fork()
	_ = s.AddPod(builder.Pod("q").Label("app", "web").OnNode("n1").Build())
	if r := pc.Check(s.Node("n1")); r.Predicate != predicates.InterPodAffinity {
		t.Fatalf("after adding a matching pod: %s, want InterPodAffinity", r)
	}
	if r := pc.Check(s.Node("n2")); !r.Fits() {
		t.Fatalf("other zone refused: %s", r)
	}
	_ = s.Revert()
	if r := pc.Check(s.Node("n1")); !r.Fits() {
		t.Fatalf("after revert: %s", r)
	}
}

func TestPrepareRefusesInvalidPod(t *testing.T) {
	s := snapshot.New()
	pod := builder.Pod("p").Spread(zone, 1, "app", "web").Build()
	pod.Spec.TopologySpreadConstraints[0].MaxSkew = 0
	_, err := predicates.New(s).Prepare(pod)
	if err == nil || !strings.Contains(err.Error(), "spec.topologySpreadConstraints[0].maxSkew") {
		t.Fatalf("err = %v, want one naming maxSkew", err)
	}
}

// TestSpreadFollowsNodeChanges: the domains a spread constraint counts
// are kept while only pods are placed, and follow nodes that join or
// leave: a zone whose only node is new is the emptiest, and a pod placed
// in each of the old zones makes the new zone the only one it fits.
func TestSpreadFollowsNodeChanges(t *testing.T) {
	s := snapshot.New()
	_ = s.AddNode(builder.Node("a1").Zone("a").Build())
	_ = s.AddNode(builder.Node("b1").Zone("b").Build())
	pod := func(name string) *v1.Pod {
		return builder.Pod(name).Label("app", "web").Spread(zone, 1, "app", "web").Build()
	}
	c := predicates.New(s)
	pc, err := c.Prepare(pod("p"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a1", "b1"} {
		if r := pc.Check(s.Node(n)); !r.Fits() {
			t.Fatalf("%s refused with no pods placed: %s", n, r)
		}
	}
	s.Fork()
	place := func(name, node string) {
		t.Helper()
		pi, err := snapshot.NewPodInfo(pod(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Place(pi, s.Node(node)); err != nil {
			t.Fatal(err)
		}
	}
	place("w1", "a1")
	if r := pc.Check(s.Node("a1")); r.Predicate != predicates.PodTopologySpread {
		t.Fatalf("a second pod in zone a with b empty: %s, want PodTopologySpread", r)
	}
	_ = s.AddNode(builder.Node("c1").Zone("c").Build())
	place("w2", "b1")
	for node, fits := range map[string]bool{"a1": false, "b1": false, "c1": true} {
		if r := pc.Check(s.Node(node)); r.Fits() != fits {
			t.Errorf("with zones a and b holding one pod and c none, %s: %s, want fits=%v", node, r, fits)
		}
	}
	_ = s.Revert()
	// Zone c is gone again: its count must not hold a or b back.
	for _, n := range []string{"a1", "b1"} {
		if r := pc.Check(s.Node(n)); !r.Fits() {
			t.Errorf("after the revert, %s refused: %s", n, r)
		}
	}
	_ = s.RemoveNode("b1")
	place("w3", "a1")
	if r := pc.Check(s.Node("a1")); !r.Fits() {
		t.Errorf("zone a is the only zone left, so skew is 0: %s", r)
	}
}

// TestSpreadDomainsFollowNodeSelector: with the node affinity policy
// honoured (the default) only the domains of nodes the pod's node
// selector admits count for skew; ignored, every domain does. Two
// matching pods sit in zone a, where the one selected node is.
func TestSpreadDomainsFollowNodeSelector(t *testing.T) {
	ignore := v1.NodeInclusionPolicyIgnore
	cases := []struct {
		name   string
		policy *v1.NodeInclusionPolicy
		fits   bool
	}{
		{"honoured: zone b holds no selected node", nil, true},
		{"ignored: zone b is empty, skew 3", &ignore, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			for _, n := range []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"} {
				b := builder.Node(n).Zone(n[:1])
				if n == "a1" {
					b.Label("pool", "x")
				}
				_ = s.AddNode(b.Build())
			}
			for _, p := range []string{"w1", "w2"} {
				_ = s.AddPod(builder.Pod(p).Label("app", "web").OnNode("a1").Build())
			}
			pod := builder.Pod("p").Label("app", "web").NodeSelector("pool", "x").Spread(zone, 1, "app", "web").Build()
			pod.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = tc.policy
			pc, err := predicates.New(s).Prepare(pod)
			if err != nil {
				t.Fatal(err)
			}
			if r := pc.Check(s.Node("a1")); r.Fits() != tc.fits {
				t.Errorf("a1: %s, want fits=%v", r, tc.fits)
			}
		})
	}
}
