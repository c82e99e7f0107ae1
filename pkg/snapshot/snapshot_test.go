package snapshot_test

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// dump renders everything observable about a snapshot in a canonical form.
func dump(s *snapshot.Snapshot) string {
	var b strings.Builder
	for _, ni := range s.Nodes() {
		fmt.Fprintf(&b, "node %s group=%q cpu=%d/%d mem=%d gpu=%d anti=%d pods=[", ni.Name(), ni.Group,
			ni.Requested.MilliCPU, ni.Allocatable.MilliCPU, ni.Requested.Memory,
			ni.Requested.Scalar[builder.GPU], len(ni.PodsWithRequiredAntiAffinity))
		for _, pi := range ni.Pods {
			b.WriteString(snapshot.PodKey(pi.Pod) + " ")
		}
		b.WriteString("]\n")
	}
	for _, key := range []string{v1.LabelTopologyZone, v1.LabelHostname} {
		for _, v := range s.DomainValues(key) {
			fmt.Fprintf(&b, "domain %s=%s:", key, v)
			for _, ni := range s.NodesInDomain(key, v) {
				b.WriteString(" " + ni.Name())
			}
			b.WriteString("\n")
		}
	}
	for _, app := range []string{"a", "b", "c"} {
		fmt.Fprintf(&b, "app=%s:", app)
		for _, pi := range s.PodsWithLabel("app", app) {
			b.WriteString(" " + snapshot.PodKey(pi.Pod))
		}
		b.WriteString("\n")
	}
	for _, ns := range []string{"default", "team"} {
		fmt.Fprintf(&b, "ns %s: %d\n", ns, len(s.PodsInNamespace(ns)))
	}
	for _, ni := range s.NodesWithRequiredAntiAffinity() {
		b.WriteString("anti-node " + ni.Name() + "\n")
	}
	for _, g := range s.NodeGroups() {
		fmt.Fprintf(&b, "group %s %d..%d\n", g.ID, g.MinSize, g.MaxSize)
	}
	fmt.Fprintf(&b, "pods %d", s.PodCount())
	return b.String()
}

func mustAdd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAddRemoveKeepsRequestsAndIndexes(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.SetNodeGroup(builder.NodeGroup("gpu").Build()))
	mustAdd(t, s.AddNodeInGroup(builder.Node("n1").Zone("a").GPU(4).Build(), "gpu"))
	mustAdd(t, s.AddNode(builder.Node("n2").Zone("b").Build()))
	mustAdd(t, s.AddPod(builder.Pod("p1").CPU("1").GPU(2).Label("app", "a").OnNode("n1").Build()))
	mustAdd(t, s.AddPod(builder.Pod("p2").CPU("500m").Label("app", "a").AntiAffinity(v1.LabelHostname, "app", "a").OnNode("n1").Build()))

	n1 := s.Node("n1")
	if got := n1.Requested.MilliCPU; got != 1500 {
		t.Errorf("n1 requested cpu = %dm, want 1500m", got)
	}
	if got := n1.Free(builder.GPU); got != 2 {
		t.Errorf("n1 free gpu = %d, want 2", got)
	}
	if got := len(s.PodsWithLabel("app", "a")); got != 2 {
		t.Errorf("pods with app=a = %d, want 2", got)
	}
	if got := s.NodesInGroup("gpu"); len(got) != 1 || got[0].Name() != "n1" {
		t.Errorf("nodes in group gpu = %v, want [n1]", got)
	}
	if !s.HasRequiredAntiAffinityPods() {
		t.Error("anti-affinity pod not indexed")
	}

	mustAdd(t, s.RemovePod("default", "p2"))
	if s.HasRequiredAntiAffinityPods() {
		t.Error("anti-affinity index kept a removed pod")
	}
	mustAdd(t, s.RemoveNode("n1"))
	if s.PodCount() != 0 || len(s.PodsWithLabel("app", "a")) != 0 {
		t.Errorf("removing a node left pods behind: count=%d", s.PodCount())
	}
	if got := s.DomainValues(v1.LabelTopologyZone); len(got) != 1 || got[0] != "b" {
		t.Errorf("zone domains = %v, want [b]", got)
	}
}

func TestForkRevertRestoresEverything(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.AddNode(builder.Node("n1").Zone("a").Build()))
	mustAdd(t, s.AddPod(builder.Pod("p1").CPU("1").Label("app", "a").OnNode("n1").Build()))
	before := dump(s)

	s.Fork()
	mustAdd(t, s.AddNode(builder.Node("n2").Zone("b").Build()))
	mustAdd(t, s.AddPod(builder.Pod("p2").CPU("1").Label("app", "b").OnNode("n2").Build()))
	mustAdd(t, s.RemovePod("default", "p1"))
	mustAdd(t, s.RemoveNode("n1"))
	mustAdd(t, s.SetNodeGroup(builder.NodeGroup("g").Build()))
	if dump(s) == before {
		t.Fatal("changes inside the fork did not show")
	}
	mustAdd(t, s.Revert())
	if got := dump(s); got != before {
		t.Errorf("after revert:\n%s\nwant:\n%s", got, before)
	}
	if err := s.Revert(); err == nil {
		t.Error("revert without an open fork succeeded")
	}
}

func TestNestedForkCommitThenRevert(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.AddNode(builder.Node("n1").Build()))
	base := dump(s)

	s.Fork()
	mustAdd(t, s.AddPod(builder.Pod("outer").CPU("1").OnNode("n1").Build()))
	afterOuter := dump(s)
	s.Fork()
	mustAdd(t, s.AddPod(builder.Pod("inner").CPU("1").OnNode("n1").Build()))
	mustAdd(t, s.Commit()) // inner kept, still undoable by the outer fork
	if s.Pod("default", "inner") == nil {
		t.Fatal("commit dropped the inner change")
	}
	s.Fork()
	mustAdd(t, s.RemovePod("default", "outer"))
	mustAdd(t, s.Revert())
	if s.Pod("default", "outer") == nil {
		t.Fatal("inner revert did not restore the pod")
	}
	if got := dump(s); got == afterOuter {
		t.Fatal("committed inner change vanished")
	}
	mustAdd(t, s.Revert())
	if got := dump(s); got != base {
		t.Errorf("outer revert:\n%s\nwant:\n%s", got, base)
	}
}

// TestRandomChangesRevertExactly applies random mutations inside nested forks
// and checks that every revert returns to the state seen at its fork.
func TestRandomChangesRevertExactly(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	s := snapshot.New()
	nodes := []string{}
	pods := map[string]bool{}
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("n%d", i)
		mustAdd(t, s.AddNode(builder.Node(name).Zone([]string{"a", "b"}[i%2]).Build()))
		nodes = append(nodes, name)
	}
	var stack []string
	stamps := map[stampOf]string{}
	for step := 0; step < 3000; step++ {
		checkStamps(t, step, s, stamps)
		switch op := r.Intn(10); {
		case op == 0 && len(stack) < 4:
			s.Fork()
			stack = append(stack, dump(s))
		case op == 1 && len(stack) > 0:
			mustAdd(t, s.Revert())
			want := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if got := dump(s); got != want {
				t.Fatalf("step %d: revert gave\n%s\nwant\n%s", step, got, want)
			}
			pods = livePods(s)
		case op < 7:
			name := fmt.Sprintf("p%d", r.Intn(40))
			if pods[name] {
				mustAdd(t, s.RemovePod("default", name))
				delete(pods, name)
				continue
			}
			node := nodes[r.Intn(len(nodes))]
			if s.Node(node) == nil {
				continue
			}
			b := builder.Pod(name).CPU("100m").Label("app", []string{"a", "b", "c"}[r.Intn(3)]).OnNode(node)
			if r.Intn(4) == 0 {
				b.AntiAffinity(v1.LabelHostname, "app", "a")
			}
			mustAdd(t, s.AddPod(b.Build()))
			pods[name] = true
		default:
			node := nodes[r.Intn(len(nodes))]
			if s.Node(node) != nil {
				mustAdd(t, s.RemoveNode(node))
			} else {
				mustAdd(t, s.AddNode(builder.Node(node).Zone("c").Build()))
			}
			pods = livePods(s)
		}
	}
}

type stampOf struct {
	ni    *snapshot.NodeInfo
	stamp uint64
}

// checkStamps checks NodeInfo.Stamp's promise: a node seen again with a
// stamp it had before has the same pods as then.
func checkStamps(t *testing.T, step int, s *snapshot.Snapshot, seen map[stampOf]string) {
	t.Helper()
	for _, ni := range s.Nodes() {
		var names []string
		for _, pi := range ni.Pods {
			names = append(names, pi.Pod.Name)
		}
		pods := strings.Join(names, ",")
		k := stampOf{ni, ni.Stamp()}
		if before, ok := seen[k]; ok && before != pods {
			t.Fatalf("step %d: node %s has stamp %d with pods [%s], and had it with [%s]", step, ni.Name(), k.stamp, pods, before)
		}
		seen[k] = pods
	}
}

func livePods(s *snapshot.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, ni := range s.Nodes() {
		for _, pi := range ni.Pods {
			out[pi.Pod.Name] = true
		}
	}
	return out
}

func TestBadInputIsRefusedAndLeavesSnapshotUnchanged(t *testing.T) {
	negative := builder.Pod("neg").OnNode("n1").Build()
	negative.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("-1")}
	badSelector := builder.Pod("sel").OnNode("n1").AntiAffinity(v1.LabelHostname, "app", "a").Build()
	badSelector.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector =
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"x"}}}}
	badNodeOp := builder.Pod("nodeop").OnNode("n1").RequireNodeLabelIn("zone", "a").Build()
	badNodeOp.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator = "Around"
	badToleration := builder.Pod("tol").OnNode("n1").Build()
	badToleration.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: "Maybe"}}
	badNode := builder.Node("bad").Build()
	badNode.Status.Allocatable[builder.GPU] = resource.MustParse("-2")
	badTaint := builder.Node("badtaint").Taint("k", "v", "Sometimes").Build()

	cases := []struct {
		name string
		add  func(*snapshot.Snapshot) error
		want []string
	}{
		{"negative request", func(s *snapshot.Snapshot) error { return s.AddPod(negative) },
			[]string{"default/neg", "spec.containers[0].resources.requests[cpu]", "-1"}},
		{"bad label selector operator", func(s *snapshot.Snapshot) error { return s.AddPod(badSelector) },
			[]string{"default/sel", "podAntiAffinity", "labelSelector", "Near"}},
		{"bad node affinity operator", func(s *snapshot.Snapshot) error { return s.AddPod(badNodeOp) },
			[]string{"default/nodeop", "nodeAffinity", "Around"}},
		{"bad toleration operator", func(s *snapshot.Snapshot) error { return s.AddPod(badToleration) },
			[]string{"default/tol", "spec.tolerations[0].operator", "Maybe"}},
		{"pod on unknown node", func(s *snapshot.Snapshot) error { return s.AddPod(builder.Pod("lost").OnNode("nowhere").Build()) },
			[]string{"default/lost", "nowhere"}},
		{"duplicate pod", func(s *snapshot.Snapshot) error { return s.AddPod(builder.Pod("p1").OnNode("n1").Build()) },
			[]string{"default/p1", "already"}},
		{"negative allocatable", func(s *snapshot.Snapshot) error { return s.AddNode(badNode) },
			[]string{"node bad", "status.allocatable[nvidia.com/gpu]", "-2"}},
		{"bad taint effect", func(s *snapshot.Snapshot) error { return s.AddNode(badTaint) },
			[]string{"node badtaint", "spec.taints[0].effect", "Sometimes"}},
		{"node in unknown group", func(s *snapshot.Snapshot) error { return s.AddNodeInGroup(builder.Node("x").Build(), "ghost") },
			[]string{"node x", "ghost"}},
		{"group max below min", func(s *snapshot.Snapshot) error { return s.SetNodeGroup(builder.NodeGroup("g").Min(3).Max(1).Build()) },
			[]string{"node group g", "maxSize", "1", "minSize 3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			mustAdd(t, s.AddNode(builder.Node("n1").Build()))
			mustAdd(t, s.AddPod(builder.Pod("p1").CPU("1").OnNode("n1").Build()))
			before, gen := dump(s), s.Generation()
			err := tc.add(s)
			if err == nil {
				t.Fatal("bad input accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if dump(s) != before || s.Generation() != gen {
				t.Error("a refused change altered the snapshot")
			}
		})
	}
}

func TestRequestsFollowTheScheduler(t *testing.T) {
	cases := []struct {
		name    string
		pod     *v1.Pod
		wantCPU int64
		wantGPU int64
	}{
		{"containers only", builder.Pod("p").CPU("1").GPU(1).Build(), 1000, 1},
		{"larger init container wins", builder.Pod("p").CPU("1").
			InitContainer(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Build(), 3000, 0},
		{"sidecar adds to containers and to later init containers", builder.Pod("p").CPU("1").
			Sidecar(map[v1.ResourceName]string{v1.ResourceCPU: "500m"}).
			InitContainer(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Build(), 2500, 0},
		{"overhead is added", builder.Pod("p").CPU("1").Overhead(v1.ResourceCPU, "250m").Build(), 1250, 0},
		{"MIG profile is a scalar", builder.Pod("p").Request("nvidia.com/mig-1g.10gb", "2").Build(), 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pi, err := snapshot.NewPodInfo(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if pi.Requests.MilliCPU != tc.wantCPU || pi.Requests.Scalar[builder.GPU] != tc.wantGPU {
				t.Errorf("requests cpu=%dm gpu=%d, want cpu=%dm gpu=%d", pi.Requests.MilliCPU,
					pi.Requests.Scalar[builder.GPU], tc.wantCPU, tc.wantGPU)
			}
		})
	}
	pi, _ := snapshot.NewPodInfo(builder.Pod("mig").Request("nvidia.com/mig-1g.10gb", "2").Build())
	if got := pi.Requests.Scalar["nvidia.com/mig-1g.10gb"]; got != 2 {
		t.Errorf("MIG request = %d, want 2", got)
	}
}

func TestScalarResourceNames(t *testing.T) {
	var got []string
	for _, n := range []v1.ResourceName{"nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "hugepages-2Mi",
		"kubernetes.io/batch", "attachable-volumes-aws-ebs", "cpu", "foo", "requests.example.com/x"} {
		if snapshot.IsScalarResourceName(n) {
			got = append(got, string(n))
		}
	}
	sort.Strings(got)
	want := "attachable-volumes-aws-ebs hugepages-2Mi kubernetes.io/batch nvidia.com/gpu nvidia.com/mig-3g.40gb"
	if strings.Join(got, " ") != want {
		t.Errorf("scalar names = %v, want %s", got, want)
	}
}

// TestNodesGeneration: it moves when a node is added, replaced or removed,
// and when such a change is reverted, and stays while only pods move.
func TestNodesGeneration(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.AddNode(builder.Node("n1").Zone("a").Build()))
	seen := map[uint64]string{}
	step := func(what string, wantMoved bool) {
		t.Helper()
		g := s.NodesGeneration()
		_, old := seen[g]
		if moved := !old; moved != wantMoved {
			t.Fatalf("after %s: nodes generation %d moved=%v, want %v", what, g, moved, wantMoved)
		}
		seen[g] = what
	}
	step("first node", true)
	mustAdd(t, s.AddPod(builder.Pod("p1").OnNode("n1").Build()))
	step("adding a pod", false)
	s.Fork()
	mustAdd(t, s.AddPod(builder.Pod("p2").OnNode("n1").Build()))
	mustAdd(t, s.RemovePod("default", "p1"))
	step("moving pods in a fork", false)
	mustAdd(t, s.AddNode(builder.Node("n2").Zone("b").Build()))
	step("adding a node", true)
	mustAdd(t, s.UpdateNode(builder.Node("n1").Zone("c").Build(), ""))
	step("replacing a node", true)
	mustAdd(t, s.RemoveNode("n2"))
	step("removing a node", true)
	mustAdd(t, s.Revert())
	step("reverting node changes", true)
	s.Fork()
	mustAdd(t, s.RemovePod("default", "p1"))
	mustAdd(t, s.Revert())
	step("reverting pod changes", false)
}
