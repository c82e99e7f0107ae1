package consolidation_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// t0 is the fake clock's start, a Wednesday at noon UTC; tests never read
// the real clock.
var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// cluster builds a snapshot for one test.
type cluster struct {
	t    testing.TB
	snap *snapshot.Snapshot
	pdbs []*policyv1.PodDisruptionBudget
}

func newCluster(t testing.TB) *cluster { return &cluster{t: t, snap: snapshot.New()} }

// group adds a node group whose template is tmpl, with its price.
func (c *cluster) group(id string, tmpl *v1.Node, price float64, edit ...func(*builder.GroupBuilder)) *cluster {
	c.t.Helper()
	b := builder.NodeGroup(id).Min(0).Max(100).Template(tmpl).Price(price)
	for _, e := range edit {
		e(b)
	}
	if err := c.snap.SetNodeGroup(b.Build()); err != nil {
		c.t.Fatal(err)
	}
	return c
}

// node adds a node of group built from the group's template, then pods
// bound to it, and raises the group's target size.
func (c *cluster) node(name, group string, pods ...*v1.Pod) *cluster {
	c.t.Helper()
	g := *c.snap.NodeGroup(group)
	n := g.Template.DeepCopy()
	n.Name = name
	n.Labels[v1.LabelHostname] = name
	return c.nodeObj(n, group, pods...)
}

func (c *cluster) nodeObj(n *v1.Node, group string, pods ...*v1.Pod) *cluster {
	c.t.Helper()
	if err := c.snap.AddNodeInGroup(n, group); err != nil {
		c.t.Fatal(err)
	}
	if group != "" {
		g := *c.snap.NodeGroup(group)
		g.TargetSize++
		if err := c.snap.SetNodeGroup(g); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, p := range pods {
		p.Spec.NodeName = n.Name
		if err := c.snap.AddPod(p); err != nil {
			c.t.Fatal(err)
		}
	}
	return c
}

func (c *cluster) pdb(name string, allowed int32, app string) *cluster {
	c.pdbs = append(c.pdbs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	})
	return c
}

func (c *cluster) input(now time.Time) consolidation.Input {
	return consolidation.Input{Now: now, Snapshot: c.snap, PDBs: c.pdbs}
}

// Node shapes: an 8-GPU node, a 1-GPU node, a 4-GPU node and a CPU node.
func gpuNode(gpus int64, cpu, mem string) *v1.Node {
	return builder.Node("template").CPU(cpu).Memory(mem).GPU(gpus).Label("nvidia.com/gpu.product", "A100").
		Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
}

func cpuNode(cpu, mem string) *v1.Node { return builder.Node("template").CPU(cpu).Memory(mem).Build() }

// owned makes p a pod of a ReplicaSet named app, labelled app=app.
func owned(p *builder.PodBuilder, app string) *v1.Pod {
	pod := p.Label("app", app).Build()
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app,
		UID: types.UID("rs-" + app), Controller: &yes}}
	return pod
}

// gpuPod asks for gpus GPUs and a little cpu, and tolerates GPU nodes.
func gpuPod(name string, gpus int64) *v1.Pod {
	return owned(builder.Pod(name).CPU("1").Memory("1Gi").GPU(gpus).Toleration("nvidia.com/gpu"), "train-"+name)
}

// cpuPod asks for cpu and memory, and tolerates GPU nodes (so it may sit on one).
func cpuPod(name, cpu string) *v1.Pod {
	return owned(builder.Pod(name).CPU(cpu).Memory("1Gi").Toleration("nvidia.com/gpu"), "web")
}

func immediate() consolidation.Options {
	o := consolidation.GPUCostOptions()
	o.StableTime = 0
	o.Budgets = nil
	return o
}

func newPlanner(t testing.TB, o consolidation.Options) *consolidation.Planner {
	t.Helper()
	p, err := consolidation.NewPlanner(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fingerprint renders what a plan must leave unchanged in a snapshot.
func fingerprint(s *snapshot.Snapshot) string {
	var b strings.Builder
	for _, ni := range s.Nodes() {
		fmt.Fprintf(&b, "%s/%s cpu=%d:", ni.Name(), ni.Group, ni.Requested.MilliCPU)
		for _, pi := range ni.Pods {
			b.WriteString(" " + snapshot.PodKey(pi.Pod))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// plan runs one pass and checks the invariants: every node is moved or
// kept exactly once, with a reason when kept; the snapshot is unchanged;
// and the moves are safe (checkSafe).
func plan(t *testing.T, c *cluster, o consolidation.Options, edit func(*consolidation.Input)) consolidation.Plan {
	t.Helper()
	in := c.input(t0)
	if edit != nil {
		edit(&in)
	}
	before := fingerprint(c.snap)
	p := newPlanner(t, o).Plan(in)
	if after := fingerprint(c.snap); after != before {
		t.Errorf("plan changed the snapshot:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	seen := map[string]int{}
	for _, m := range p.Moves {
		for _, n := range m.Nodes {
			seen[n.Name]++
		}
	}
	for _, k := range p.Kept {
		seen[k.Node]++
		if k.Reason == "" || k.Message == "" {
			t.Errorf("kept node %s lacks a reason or message: %+v", k.Node, k)
		}
	}
	for _, ni := range c.snap.Nodes() {
		if seen[ni.Name()] != 1 {
			t.Errorf("node %s appears %d times in the plan, want once", ni.Name(), seen[ni.Name()])
		}
	}
	if !slices.IsSortedFunc(p.Kept, func(a, b consolidation.Kept) int { return strings.Compare(a.Node, b.Node) }) {
		t.Error("Kept is not sorted by node")
	}
	checkSafe(t, c.snap, p)
	return p
}

// checkSafe carries the plan out on a copy of the snapshot, as the loop
// would once every replacement is Ready: replacement nodes are added from
// their group's template, the moved nodes removed, and each evicted pod
// placed where the plan says (a replacement node when it says so). Every
// pod must then pass the scheduler's checks where it lands, and no pod may
// land on a node a move removes.
func checkSafe(t *testing.T, s *snapshot.Snapshot, p consolidation.Plan) {
	t.Helper()
	s.Fork()
	defer func() { _ = s.Revert() }()
	gone := map[string]bool{}
	for _, m := range p.Moves {
		for _, n := range m.Nodes {
			gone[n.Name] = true
		}
	}
	var newNodes []string
	for mi, m := range p.Moves {
		for k := 0; k < m.Launch.Count; k++ {
			n := s.NodeGroup(m.Launch.Group).Template.DeepCopy()
			n.Name = fmt.Sprintf("replacement-%d-%d", mi, k)
			n.Labels[v1.LabelHostname] = n.Name
			if err := s.AddNodeInGroup(n, m.Launch.Group); err != nil {
				t.Fatal(err)
			}
			newNodes = append(newNodes, n.Name)
		}
	}
	var dests []consolidation.Eviction
	for _, m := range p.Moves {
		for _, ev := range m.Evict {
			if gone[ev.To] {
				t.Errorf("pod %s is planned onto node %s, which the plan removes", ev.Pod.Name, ev.To)
			}
			dests = append(dests, ev)
		}
	}
	// Pods for existing nodes first; then those for replacement nodes,
	// largest first, as the estimator packs them.
	size := func(ev consolidation.Eviction) (int64, int64) {
		r := ev.Pod.Spec.Containers[0].Resources.Requests
		return r.Name("nvidia.com/gpu", "").Value(), r.Cpu().MilliValue()
	}
	slices.SortStableFunc(dests, func(a, b consolidation.Eviction) int {
		if a.ToReplacement != b.ToReplacement {
			if a.ToReplacement {
				return 1
			}
			return -1
		}
		if !a.ToReplacement {
			return 0
		}
		ag, ac := size(a)
		bg, bc := size(b)
		if ag != bg {
			return int(bg - ag)
		}
		return int(bc - ac)
	})
	moving := make([]*v1.Pod, len(dests))
	for i := range dests {
		moving[i] = dests[i].Pod
	}
	for n := range gone {
		if err := s.RemoveNode(n); err != nil {
			t.Fatal(err)
		}
	}
	checker := predicates.New(s)
	for i, pod := range moving {
		cp := pod.DeepCopy()
		cp.Spec.NodeName = ""
		pc, err := checker.Prepare(cp)
		if err != nil {
			t.Fatal(err)
		}
		candidates := []string{dests[i].To}
		if dests[i].ToReplacement {
			candidates = newNodes
		}
		placed := false
		for _, name := range candidates {
			if ni := s.Node(name); ni != nil && pc.Check(ni).Fits() {
				cp.Spec.NodeName = name
				if err := s.AddPod(cp); err != nil {
					t.Fatal(err)
				}
				placed = true
				break
			}
		}
		if !placed {
			t.Errorf("pod %s does not fit where the plan sends it (%v, replacement %v)", pod.Name, dests[i].To, dests[i].ToReplacement)
		}
	}
}

func moveNodes(m consolidation.Move) []string {
	var out []string
	for _, n := range m.Nodes {
		out = append(out, n.Name)
	}
	return out
}

func kept(t *testing.T, p consolidation.Plan, node string) consolidation.Kept {
	t.Helper()
	for _, k := range p.Kept {
		if k.Node == node {
			return k
		}
	}
	t.Fatalf("node %s is not kept; moves %s", node, summary(p))
	return consolidation.Kept{}
}

func summary(p consolidation.Plan) string {
	var b strings.Builder
	for _, m := range p.Moves {
		fmt.Fprintf(&b, "\n  %s %v launch %+v: %s", m.Kind, moveNodes(m), m.Launch, m.Message)
		for _, ev := range m.Evict {
			fmt.Fprintf(&b, "\n    %s -> %s%s", ev.Pod.Name, ev.To, map[bool]string{true: "(replacement)"}[ev.ToReplacement])
		}
	}
	for _, k := range p.Kept {
		fmt.Fprintf(&b, "\n  kept %s: %s: %s", k.Node, k.Reason, k.Message)
	}
	return b.String()
}
