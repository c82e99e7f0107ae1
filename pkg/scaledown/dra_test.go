package scaledown_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

const nvidiaDRA = "gpu.nvidia.com"

// draNode adds a node with n DRA GPUs and pods holding one GPU each
// through their own claims.
func (c *cluster) draNode(name string, gpus, busy int) *cluster {
	c.t.Helper()
	if err := c.snap.SetResourceSlice(builder.NodeSlice(name, nvidiaDRA, builder.Devices("gpu-", gpus)...)); err != nil {
		c.t.Fatal(err)
	}
	var pods []*v1.Pod
	for i := 0; i < busy; i++ {
		p := controlledBy(builder.Pod(fmt.Sprintf("%s-job-%d", name, i)).CPU("100m").ResourceClaim(fmt.Sprintf("%s-claim-%d", name, i)).Build(), "ReplicaSet", "train")
		claim := builder.Claim(fmt.Sprintf("%s-claim-%d", name, i)).Request("gpu", "gpu", 1).
			Allocated(name, nvidiaDRA, []string{fmt.Sprintf("gpu-%d", i)}, p).Build()
		if err := c.snap.SetResourceClaim(claim); err != nil {
			c.t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return c.node(node4(name).Build(), "pool", pods...)
}

func draCluster(t *testing.T) *cluster {
	c := newCluster(t).group("pool", 0, 3)
	if err := c.snap.SetDeviceClass(builder.DeviceClass("gpu", `device.driver == "gpu.nvidia.com"`)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDRANodesAreJudgedByTheirDevices: a node whose claims hold 1 of its 4
// GPUs is at 25% (the GPU threshold decides), however busy its cpu.
func TestDRANodesAreJudgedByTheirDevices(t *testing.T) {
	c := draCluster(t).draNode("a", 4, 1)
	o := scaledown.DefaultOptions()
	u := scaledown.NodeUtilization(c.snap, c.snap.Node("a"), &o, t0)
	if !u.GPUNode || u.Resource != nvidiaDRA || math.Abs(u.Value-0.25) > 1e-9 {
		t.Errorf("utilization %+v, want gpu.nvidia.com at 0.25", u)
	}
}

// TestDRARemovalMovesClaims: two nodes of 4 GPUs, 1 and 2 held. The less
// used one goes; its pod's claim is allocated again on the other node's
// free devices. With 3 and 2 held nothing can move.
func TestDRARemovalMovesClaims(t *testing.T) {
	c := draCluster(t).draNode("a", 4, 1).draNode("b", 4, 2)
	o := immediate()
	o.GPUUtilizationThreshold = 0.6
	plan := newPlanner(t, o).Plan(c.input(t0))
	if got := deleted(plan); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("deleted %v, want [a]", got)
	}
	if len(plan.Delete[0].Evict) != 1 || plan.Delete[0].Evict[0].To != "b" {
		t.Errorf("moves %+v, want a's pod to b", plan.Delete[0].Evict)
	}
	if c.snap.AllocatedDeviceCount() != 3 {
		t.Errorf("planning left %d devices held, want the 3 it started with", c.snap.AllocatedDeviceCount())
	}

	full := draCluster(t).draNode("a", 4, 3).draNode("b", 4, 2)
	o.GPUUtilizationThreshold = 1
	plan = newPlanner(t, o).Plan(full.input(t0))
	if got := deleted(plan); len(got) != 0 {
		t.Errorf("deleted %v although 5 claims do not fit 4 GPUs", got)
	}
}

// TestDRANodeAwaitingSlicesIsKept: a node of a DRA group that has not
// published its slices yet is waiting for its driver, not idle.
func TestDRANodeAwaitingSlicesIsKept(t *testing.T) {
	c := draCluster(t)
	g := builder.NodeGroup("dra").Min(0).Max(10).Target(1).Template(builder.Node("template-dra").Build()).
		TemplateSlices(builder.NodeSlice("template-dra", nvidiaDRA, builder.Devices("gpu-", 4)...)).Build()
	if err := c.snap.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	c.node(node4("fresh").Build(), "dra")
	plan := newPlanner(t, immediate()).Plan(c.input(t0))
	if got := deleted(plan); len(got) != 0 {
		t.Errorf("deleted %v: a node whose DRA driver has not started", got)
	}
}
