package estimator_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func classesOf(t *testing.T, groups ...[]*v1.Pod) [][]*snapshot.PodInfo {
	t.Helper()
	var out [][]*snapshot.PodInfo
	for _, g := range groups {
		var c []*snapshot.PodInfo
		for _, p := range g {
			pi, err := snapshot.NewPodInfo(p)
			if err != nil {
				t.Fatal(err)
			}
			c = append(c, pi)
		}
		out = append(out, c)
	}
	return out
}

func pods(prefix string, n int, mk func(*builder.PodBuilder) *builder.PodBuilder) []*v1.Pod {
	var out []*v1.Pod
	for i := 0; i < n; i++ {
		out = append(out, mk(builder.Pod(fmt.Sprintf("%s-%d", prefix, i))).Build())
	}
	return out
}

func TestPack(t *testing.T) {
	tmpl := builder.Node("t").CPU("8").Memory("32Gi").Zone("a").Build()
	cpu := func(q string) func(*builder.PodBuilder) *builder.PodBuilder {
		return func(b *builder.PodBuilder) *builder.PodBuilder { return b.CPU(q) }
	}
	cases := []struct {
		name      string
		classes   [][]*v1.Pod
		maxNodes  int
		wantNodes int
		wantPods  int
		limit     bool
	}{
		{"largest first packs 5+3 twice into two nodes", [][]*v1.Pod{pods("s", 2, cpu("3")), pods("l", 2, cpu("5"))}, 10, 2, 4, false},
		{"identical pods fill nodes", [][]*v1.Pod{pods("p", 17, cpu("2"))}, 10, 5, 17, false},
		{"max nodes stops the estimate", [][]*v1.Pod{pods("p", 17, cpu("2"))}, 2, 2, 8, true},
		{"hostname anti-affinity gives a node per pod", [][]*v1.Pod{pods("solo", 3, func(b *builder.PodBuilder) *builder.PodBuilder {
			return b.CPU("1").Label("app", "solo").AntiAffinity(v1.LabelHostname, "app", "solo")
		})}, 10, 3, 3, false},
		{"pods that fit no template are not packed", [][]*v1.Pod{pods("huge", 2, cpu("9"))}, 10, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			g := builder.NodeGroup("g").Template(tmpl).Build()
			_ = s.SetNodeGroup(g)
			tpl, err := estimator.NewTemplate(&g, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := s.Generation()
			est, err := estimator.Pack(s, tpl, classesOf(t, tc.classes...), estimator.Options{MaxNodes: tc.maxNodes})
			if err != nil {
				t.Fatal(err)
			}
			if est.NodeCount != tc.wantNodes || est.PodCount != tc.wantPods || est.LimitReached != tc.limit {
				t.Errorf("nodes %d pods %d limit %v, want %d %d %v", est.NodeCount, est.PodCount, est.LimitReached, tc.wantNodes, tc.wantPods, tc.limit)
			}
			if len(s.Nodes()) != 0 || s.ForkDepth() != 0 || s.Generation() == before {
				t.Errorf("snapshot not restored: %d nodes, fork depth %d", len(s.Nodes()), s.ForkDepth())
			}
		})
	}
}

func TestPackExplainsMisfits(t *testing.T) {
	s := snapshot.New()
	g := builder.NodeGroup("gpu-a10").Template(builder.Node("t").GPU(1).Build()).Build()
	_ = s.SetNodeGroup(g)
	tpl, _ := estimator.NewTemplate(&g, nil)
	est, err := estimator.Pack(s, tpl, classesOf(t, []*v1.Pod{builder.Pod("p").GPU(2).Build()}), estimator.Options{MaxNodes: 5})
	if err != nil {
		t.Fatal(err)
	}
	got := est.Reasons[0].Message("template")
	if want := "Insufficient nvidia.com/gpu (wants 2, template has 1)"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

func TestSpreadOverOneZoneTemplate(t *testing.T) {
	// Existing nodes in zones a and b hold one pod each; the template is in
	// zone a: with maxSkew 1, the new zone-a node takes one pod, not two.
	s := snapshot.New()
	for _, z := range []string{"a", "b"} {
		_ = s.AddNode(builder.Node("n-" + z).CPU("1").Zone(z).Build())
		_ = s.AddPod(builder.Pod("old-"+z).Label("app", "w").OnNode("n-" + z).Build())
	}
	g := builder.NodeGroup("zone-a").Template(builder.Node("t").CPU("8").Zone("a").Build()).Build()
	_ = s.SetNodeGroup(g)
	tpl, _ := estimator.NewTemplate(&g, nil)
	spread := pods("w", 3, func(b *builder.PodBuilder) *builder.PodBuilder {
		return b.CPU("100m").Label("app", "w").Spread(v1.LabelTopologyZone, 1, "app", "w")
	})
	est, err := estimator.Pack(s, tpl, classesOf(t, spread), estimator.Options{MaxNodes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if est.PodCount != 1 || est.NodeCount != 1 {
		t.Errorf("packed %d pods on %d nodes, want 1 on 1", est.PodCount, est.NodeCount)
	}
	if strings.Contains(fmt.Sprint(est.Reasons), "Insufficient") {
		t.Errorf("unexpected reasons %v", est.Reasons)
	}
}
