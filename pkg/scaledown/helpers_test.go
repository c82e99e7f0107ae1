package scaledown_test

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
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// t0 is the fake clock's start; tests never read the real clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// cluster builds a snapshot for one test.
type cluster struct {
	t    testing.TB
	snap *snapshot.Snapshot
	pdbs []*policyv1.PodDisruptionBudget
}

func newCluster(t testing.TB) *cluster { return &cluster{t: t, snap: snapshot.New()} }

func (c *cluster) group(id string, min, target int) *cluster {
	c.t.Helper()
	if err := c.snap.SetNodeGroup(builder.NodeGroup(id).Min(min).Max(100).Target(target).Build()); err != nil {
		c.t.Fatal(err)
	}
	return c
}

// node adds a node to group ("" for none), then the pods given, bound to it.
func (c *cluster) node(n *v1.Node, group string, pods ...*v1.Pod) *cluster {
	c.t.Helper()
	if err := c.snap.AddNodeInGroup(n, group); err != nil {
		c.t.Fatal(err)
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

func (c *cluster) input(now time.Time) scaledown.Input {
	return scaledown.Input{Now: now, Snapshot: c.snap, PDBs: c.pdbs}
}

// node4 is a Ready node with 4 cpu and 16Gi.
func node4(name string) *builder.NodeBuilder { return builder.Node(name).CPU("4").Memory("16Gi") }

func unready(n *v1.Node) *v1.Node {
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	return n
}

func annotateNode(n *v1.Node, k, v string) *v1.Node {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
	return n
}

func controlledBy(p *v1.Pod, kind, name string) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name,
		UID: types.UID("uid-" + name), Controller: &yes}}
	return p
}

// rs is a ReplicaSet pod labelled app=web requesting cpu.
func rs(name, cpu string) *v1.Pod {
	return controlledBy(builder.Pod(name).CPU(cpu).Label("app", "web").Build(), "ReplicaSet", "web")
}

func podEdit(p *v1.Pod, edit func(*v1.Pod)) *v1.Pod { edit(p); return p }

func newPlanner(t testing.TB, opts scaledown.Options) *scaledown.Planner {
	t.Helper()
	p, err := scaledown.NewPlanner(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// immediate are the defaults with no unneeded time, so one loop decides.
func immediate() scaledown.Options {
	o := scaledown.DefaultOptions()
	o.UnneededTime = 0
	return o
}

func deleted(p scaledown.Plan) []string {
	var out []string
	for _, r := range p.Delete {
		out = append(out, r.Node)
	}
	return out
}

func removal(t *testing.T, p scaledown.Plan, node string) disruption.Removal {
	t.Helper()
	for _, r := range p.Delete {
		if r.Node == node {
			return r
		}
	}
	t.Fatalf("node %s is not removed; removed %v, kept %s", node, deleted(p), keptSummary(p))
	return disruption.Removal{}
}

func kept(t *testing.T, p scaledown.Plan, node string) scaledown.Kept {
	t.Helper()
	for _, k := range p.Kept {
		if k.Node == node {
			return k
		}
	}
	t.Fatalf("node %s is not kept; removed %v", node, deleted(p))
	return scaledown.Kept{}
}

func unneeded(t *testing.T, p scaledown.Plan, node string) scaledown.Unneeded {
	t.Helper()
	for _, u := range p.Unneeded {
		if u.Node == node {
			return u
		}
	}
	t.Fatalf("node %s is not among the waiting unneeded nodes %+v", node, p.Unneeded)
	return scaledown.Unneeded{}
}

func keptSummary(p scaledown.Plan) string {
	var b strings.Builder
	for _, k := range p.Kept {
		fmt.Fprintf(&b, "\n  %s: %s: %s", k.Node, k.Reason, k.Message)
	}
	return b.String()
}

func evictions(r disruption.Removal) []string {
	var out []string
	for _, m := range r.Evict {
		out = append(out, m.Pod.Name+"->"+m.To)
	}
	return out
}

// fingerprint renders what a plan must leave unchanged in a snapshot.
func fingerprint(s *snapshot.Snapshot) string {
	var b strings.Builder
	for _, ni := range s.Nodes() {
		fmt.Fprintf(&b, "%s/%s cpu=%d mem=%d:", ni.Name(), ni.Group, ni.Requested.MilliCPU, ni.Requested.Memory)
		for _, pi := range ni.Pods {
			b.WriteString(" " + snapshot.PodKey(pi.Pod))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "pods=%d gen-independent", s.PodCount())
	return b.String()
}

// checkInvariants: every node is removed or kept, exactly once; lists are
// in their documented order; the snapshot is back as it was.
func checkInvariants(t *testing.T, s *snapshot.Snapshot, before string, p scaledown.Plan) {
	t.Helper()
	seen := map[string]string{}
	for _, r := range p.Delete {
		seen[r.Node] += "deleted "
	}
	for _, k := range p.Kept {
		seen[k.Node] += "kept "
		if k.Reason == "" || k.Message == "" {
			t.Errorf("kept node %s lacks a reason or message: %+v", k.Node, k)
		}
	}
	for _, ni := range s.Nodes() {
		if got := seen[ni.Name()]; got != "deleted " && got != "kept " {
			t.Errorf("node %s is %q in the plan, want exactly one of deleted or kept", ni.Name(), got)
		}
		delete(seen, ni.Name())
	}
	for n := range seen {
		t.Errorf("plan names node %s that is not in the snapshot", n)
	}
	if !slices.IsSortedFunc(p.Kept, func(a, b scaledown.Kept) int { return strings.Compare(a.Node, b.Node) }) {
		t.Error("Kept is not sorted by node")
	}
	if !slices.IsSorted(p.SoftTaint) || !slices.IsSorted(p.SoftUntaint) {
		t.Error("soft taint lists are not sorted")
	}
	if after := fingerprint(s); after != before {
		t.Errorf("plan changed the snapshot:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// planOnce runs one loop on c with opts at now and checks the invariants.
func planOnce(t *testing.T, c *cluster, opts scaledown.Options, edit func(*scaledown.Input)) scaledown.Plan {
	t.Helper()
	in := c.input(t0)
	if edit != nil {
		edit(&in)
	}
	before := fingerprint(c.snap)
	p := newPlanner(t, opts).Plan(in)
	checkInvariants(t, c.snap, before, p)
	return p
}
