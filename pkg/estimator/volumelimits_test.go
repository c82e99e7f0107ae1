package estimator_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// TestTemplateNodesTakeASiblingsAttachLimit: a template node has no CSINode;
// new nodes take the attach limits of a registered node of their group, and
// have none when no node of the group has a CSINode (scale from zero).
func TestTemplateNodesTakeASiblingsAttachLimit(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	cases := []struct {
		name      string
		sibling   *builder.CSINodeBuilder // CSINode of the group's registered node g-1
		other     *builder.CSINodeBuilder // CSINode of a node of another group
		wantNodes int
	}{
		{"a sibling's limit of 2 volumes", builder.CSINode("g-1").Driver(ebs, 2), nil, 3},
		{"no sibling CSINode: no limit", nil, nil, 1},
		{"another group's limit does not apply", nil, builder.CSINode("h-1").Driver(ebs, 1), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			g := builder.NodeGroup("g").Max(10).Template(builder.Node("t").CPU("8").Build()).Build()
			h := builder.NodeGroup("h").Max(10).Template(builder.Node("th").CPU("8").Build()).Build()
			mustOK(t, s.SetNodeGroup(g), s.SetNodeGroup(h))
			mustOK(t, s.AddNodeInGroup(builder.Node("g-1").CPU("1").Build(), "g"),
				s.AddNodeInGroup(builder.Node("h-1").CPU("1").Build(), "h"))
			for _, cn := range []*builder.CSINodeBuilder{tc.sibling, tc.other} {
				if cn != nil {
					mustOK(t, s.SetCSINode(cn.Build()))
				}
			}
			mustOK(t, s.SetStorageClass(builder.StorageClass("gp3").WaitForFirstConsumer().Provisioner(ebs).Build()))
			var pending [][]*v1.Pod // one class per pod: their claims differ
			for i := 0; i < 5; i++ {
				claim := fmt.Sprintf("data-%d", i)
				mustOK(t, s.SetPersistentVolumeClaim(builder.VolumeClaim(claim).Class("gp3").Build()))
				pending = append(pending, []*v1.Pod{builder.Pod(fmt.Sprintf("p-%d", i)).CPU("100m").Claim(claim).Build()})
			}
			tpl, err := estimator.NewTemplate(&g, nil)
			if err != nil {
				t.Fatal(err)
			}
			est, err := estimator.Pack(s, tpl, classesOf(t, pending...), estimator.Options{MaxNodes: 10})
			if err != nil {
				t.Fatal(err)
			}
			if est.NodeCount != tc.wantNodes || est.PodCount != 5 {
				t.Errorf("packed %d pods on %d nodes, want 5 on %d", est.PodCount, est.NodeCount, tc.wantNodes)
			}
			if len(s.CSINodes()) != btoi(tc.sibling != nil)+btoi(tc.other != nil) {
				t.Errorf("the estimate left CSINodes behind: %d", len(s.CSINodes()))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustOK(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
