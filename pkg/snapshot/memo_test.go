package snapshot_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func TestNodeMemo(t *testing.T) {
	s := snapshot.New()
	mustAdd(t, s.AddNode(builder.Node("n").CPU("4").Build()))
	var m snapshot.NodeMemo[uint64, string]
	ni := s.Node("n")
	m.Put(ni, ni.Stamp(), "empty")
	if v, ok := m.Get(ni, ni.Stamp()); !ok || v != "empty" {
		t.Fatalf("Get = %q, %v right after Put", v, ok)
	}
	mustAdd(t, s.AddPod(builder.Pod("p").CPU("1").OnNode("n").Build()))
	if v, ok := m.Get(ni, ni.Stamp()); ok {
		t.Errorf("a pod bound, yet the value %q is answered for the new stamp", v)
	}
	m.Put(ni, ni.Stamp(), "one pod")
	mustAdd(t, s.UpdateNode(builder.Node("n").CPU("8").Build(), ""))
	if v, ok := m.Get(s.Node("n"), s.Node("n").Stamp()); ok {
		t.Errorf("the node replaced, yet the old node's value %q is answered", v)
	}
	m.EndPass() // the old NodeInfo was asked for in this pass: kept
	if m.Len() != 1 {
		t.Errorf("%d kept after a pass that asked for one node", m.Len())
	}
	m.EndPass()
	if m.Len() != 0 {
		t.Errorf("%d kept after a pass that asked for none", m.Len())
	}
}
