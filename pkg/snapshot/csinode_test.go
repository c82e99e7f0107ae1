package snapshot_test

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func TestCSINodesSetRemoveRevertAndExport(t *testing.T) {
	s := snapshot.New()
	cn := builder.CSINode("n1").Driver("ebs.csi.aws.com", 25).Build()
	s.Fork()
	mustAdd(t, s.SetCSINode(cn))
	if s.CSINode("n1") != cn {
		t.Fatal("CSINode n1 not found after SetCSINode")
	}
	s.Revert()
	if s.CSINode("n1") != nil {
		t.Fatal("Revert kept a CSINode set in the fork")
	}
	mustAdd(t, s.SetCSINode(cn))
	mustAdd(t, s.SetCSINode(builder.CSINode("n0").Build()))
	again, err := snapshot.FromObjects(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	if got := again.CSINodes(); len(got) != 2 || got[0].Name != "n0" || got[1] != cn {
		t.Fatalf("export and rebuild: CSINodes %v, want n0 and n1 in order", got)
	}
	s.RemoveCSINode("n1")
	if s.CSINode("n1") != nil {
		t.Fatal("RemoveCSINode kept n1")
	}
}

func TestBadCSINodeIsRefused(t *testing.T) {
	negative := builder.CSINode("n1").Driver("ebs.csi.aws.com", -1).Build()
	twice := builder.CSINode("n1").Driver("ebs.csi.aws.com", 1).Driver("ebs.csi.aws.com", 2).Build()
	unnamed := builder.CSINode("n1").Driver("", 1).Build()
	cases := []struct {
		name string
		set  func(*snapshot.Snapshot) error
		want []string
	}{
		{"negative count", func(s *snapshot.Snapshot) error { return s.SetCSINode(negative) },
			[]string{"csi node n1", "spec.drivers[0].allocatable.count", "-1"}},
		{"driver twice", func(s *snapshot.Snapshot) error { return s.SetCSINode(twice) },
			[]string{"csi node n1", "spec.drivers[1].name", "ebs.csi.aws.com"}},
		{"driver without a name", func(s *snapshot.Snapshot) error { return s.SetCSINode(unnamed) },
			[]string{"csi node n1", "spec.drivers[0].name"}},
		{"no name", func(s *snapshot.Snapshot) error { return s.SetCSINode(builder.CSINode("").Build()) },
			[]string{"csi node", "metadata.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			gen := s.Generation()
			err := tc.set(s)
			if err == nil {
				t.Fatal("bad CSINode accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if s.Generation() != gen || len(s.CSINodes()) != 0 {
				t.Error("a refused CSINode changed the snapshot")
			}
		})
	}
}

func TestGroupCSINodeIsARegisteredSiblings(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.SetNodeGroup(builder.NodeGroup("g").Max(5).Build()))
	mustAdd(t, s.SetNodeGroup(builder.NodeGroup("h").Max(5).Build()))
	for _, n := range []struct{ name, group string }{{"a", "g"}, {"b", "g"}, {"c", "g"}, {"x", "h"}} {
		mustAdd(t, s.AddNodeInGroup(builder.Node(n.name).Build(), n.group))
	}
	if s.GroupCSINode("g", "") != nil {
		t.Fatal("a group without CSINodes has one")
	}
	b, c := builder.CSINode("b").Build(), builder.CSINode("c").Build()
	mustAdd(t, s.SetCSINode(c))
	mustAdd(t, s.SetCSINode(b))
	mustAdd(t, s.SetCSINode(builder.CSINode("x").Build()))
	if got := s.GroupCSINode("g", ""); got != b {
		t.Errorf("GroupCSINode(g) = %v, want the first sibling by name, b", got)
	}
	if got := s.GroupCSINode("g", "b"); got != c {
		t.Errorf("GroupCSINode(g, except b) = %v, want c", got)
	}
}
