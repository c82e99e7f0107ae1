package kwok

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// A group out of capacity: the next Refresh reports its nodes failed, once,
// with the group's zone; they are never created, count in the target until
// given back, and DecreaseTargetSize gives the failed ones back first.
func TestOutOfCapacityIsReportedOnce(t *testing.T) {
	e := newEnv(t)
	cfg, err := ParseConfig([]byte(exampleConfig))
	e.must(err)
	out := true
	e.p, err = New(Options{Client: e.client, Config: cfg, Namespace: testNamespace, Clock: e.clock,
		Faults: Faults{OutOfCapacity: func(group, _ string) bool { return out && group == "gpu-a10g" }}})
	e.must(err)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 2))
	e.must(e.p.IncreaseSize(e.ctx, "cpu", 1))
	e.must(e.p.Refresh(e.ctx))
	got := e.p.FailedCreations()
	if len(got) != 1 || got[0] != (cloudprovider.FailedCreations{Group: "gpu-a10g", Count: 2, Class: cloudprovider.ErrorOutOfResources,
		Code: CodeOutOfCapacity, Message: "kwok: no capacity for 2 node(s) of group gpu-a10g", Zone: "us-east-1a"}) {
		t.Fatalf("failed creations %+v, want gpu-a10g's two nodes in us-east-1a", got)
	}
	e.must(e.p.Refresh(e.ctx))
	if again := e.p.FailedCreations(); len(again) != 0 {
		t.Fatalf("reported again: %+v", again)
	}
	e.after(time.Hour)
	if n := len(e.nodes("gpu-a10g")); n != 0 || e.target("gpu-a10g") != 2 || len(e.group("gpu-a10g").Instances) != 0 {
		t.Fatalf("%d nodes, target %d, instances %+v: want none created, both counted, no instance", n, e.target("gpu-a10g"), e.group("gpu-a10g").Instances)
	}
	if n := len(e.nodes("cpu")); n != 1 {
		t.Errorf("the other group's node: %d, want 1", n)
	}
	// Capacity is back: a new node is created, the failed ones are given
	// back first.
	out = false
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.must(e.p.DecreaseTargetSize(e.ctx, "gpu-a10g", 2))
	e.after(time.Hour)
	if n := len(e.nodes("gpu-a10g")); n != 1 || e.target("gpu-a10g") != 1 {
		t.Errorf("%d nodes, target %d: want the new node created and the failed ones gone", n, e.target("gpu-a10g"))
	}
}
