package clusterstate_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestScaleUpRequestsCloseOrTimeOut(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("g").Target(2).Template(builder.Node("t").Build()).Build())
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.RecordScaleUp("g", 2, t0)

	_ = s.AddNodeInGroup(builder.Node("n1").Build(), "g")
	if shrinks := st.Update(s, t0.Add(10*time.Minute)); len(shrinks) != 0 {
		t.Fatalf("shrinks before the timeout: %+v", shrinks)
	}
	shrinks := st.Update(s, t0.Add(15*time.Minute))
	if len(shrinks) != 1 || shrinks[0].Delta != 1 {
		t.Fatalf("shrinks = %+v, want one node of g", shrinks)
	}
	if off, until, _ := st.BackedOff("g", t0.Add(15*time.Minute)); !off || !until.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("backed off %v until %v, want until +20m", off, until)
	}
	if off, _, _ := st.BackedOff("g", t0.Add(20*time.Minute)); off {
		t.Error("still backed off when the backoff ended")
	}

	st.RecordScaleUp("g", 1, t0.Add(30*time.Minute))
	_ = s.AddNodeInGroup(builder.Node("n2").Build(), "g")
	if shrinks := st.Update(s, t0.Add(50*time.Minute)); len(shrinks) != 0 {
		t.Errorf("a delivered scale-up timed out: %+v", shrinks)
	}
}

func TestAwaitingGPU(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("gpu").Template(builder.Node("t").GPU(1).Build()).Build())
	_ = s.SetNodeGroup(builder.NodeGroup("cpu").Template(builder.Node("c").Build()).Build())
	add := func(name, group string, gpus int64, age time.Duration) {
		n := builder.Node(name).GPU(gpus).Build()
		n.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		_ = s.AddNodeInGroup(n, group)
	}
	add("fresh", "gpu", 0, 5*time.Minute)
	add("stuck", "gpu", 0, 20*time.Minute)
	add("ready", "gpu", 1, 20*time.Minute)
	add("cpu-node", "cpu", 0, time.Minute)
	starting, overdue := clusterstate.New(clusterstate.DefaultOptions()).Starting(s, t0)
	if len(starting) != 1 || starting[0].Name() != "fresh" || len(overdue) != 1 || overdue[0].Name() != "stuck" {
		t.Errorf("starting %v overdue %v, want [fresh] [stuck]", names(starting), names(overdue))
	}
}

func names(nis []*snapshot.NodeInfo) []string {
	var out []string
	for _, ni := range nis {
		out = append(out, ni.Name())
	}
	return out
}
