package scaleup_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

const nvidiaDRA = "gpu.nvidia.com"

// draWorld: a CPU group and a DRA group whose nodes publish 8 GPUs of the
// NVIDIA DRA driver (none from the device plugin), both empty.
func draWorld(t *testing.T) *world {
	w := newWorld(t).
		group(builder.NodeGroup("cpu").Template(cpuTemplate("c"))).
		group(builder.NodeGroup("dra").Template(builder.Node("template-dra").CPU("32").Memory("128Gi").Build()).
			TemplateSlices(builder.NodeSlice("template-dra", nvidiaDRA, builder.Devices("gpu-", 8)...)))
	if err := w.snap.SetDeviceClass(builder.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`)); err != nil {
		t.Fatal(err)
	}
	one := builder.Claim("one").Request("gpu", "gpu.nvidia.com", 1).Build()
	if err := w.snap.SetResourceClaimTemplate(builder.ClaimTemplate("one-gpu", one)); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDRAScaleFromZero: ten pods asking for one GPU each through claims
// from a template (not made yet: the pods are new) need two nodes of 8
// GPUs, and only the DRA group has them.
func TestDRAScaleFromZero(t *testing.T) {
	w := draWorld(t)
	pods := replicas(10, func(i int) *v1.Pod {
		return owned(builder.Pod(fmt.Sprintf("train-%d", i)).CPU("1").ResourceClaimTemplate("gpu", "one-gpu").Build(), "train")
	})
	for seed := int64(0); seed < 4; seed++ {
		o := opts("random")
		o.Seed = seed
		if got := summary(w.plan(o, t0, pods...)); got != "dra+2" {
			t.Fatalf("seed %d: scale-ups = %q, want dra+2", seed, got)
		}
	}
	if w.snap.AllocatedDeviceCount() != 0 {
		t.Errorf("planning left %d devices allocated", w.snap.AllocatedDeviceCount())
	}
}

// TestDRAPodsWithTheirOwnClaimsShareAClass: pods that each name a claim of
// their own (same spec, unallocated) are one class; 16 of them take 2
// nodes. A pod sharing a claim with another joins the first node's claim.
func TestDRAPodsWithTheirOwnClaimsShareAClass(t *testing.T) {
	w := draWorld(t)
	var pods []*v1.Pod
	for i := 0; i < 16; i++ {
		name := fmt.Sprintf("claim-%d", i)
		if err := w.snap.SetResourceClaim(builder.Claim(name).Request("gpu", "gpu.nvidia.com", 1).Build()); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, builder.Pod(fmt.Sprintf("p%d", i)).CPU("1").ResourceClaim(name).Build())
	}
	// A second user of claim-0 takes no GPU of its own.
	pods = append(pods, builder.Pod("p-shared").CPU("1").ResourceClaim("claim-0").Build())
	plan := w.plan(opts("random"), t0, pods...)
	if got := summary(plan); got != "dra+2" {
		t.Fatalf("scale-ups = %q, want dra+2", got)
	}
	if len(plan.Triggered) != 17 {
		t.Errorf("%d pods triggered the scale-up, want 17", len(plan.Triggered))
	}
}

func TestCPUPodsAvoidDRAGroups(t *testing.T) {
	w := newWorld(t).
		group(builder.NodeGroup("cpu").Template(cpuTemplate("c"))).
		group(builder.NodeGroup("dra").Template(builder.Node("template-dra").CPU("32").Memory("128Gi").Build()).
			TemplateSlices(builder.NodeSlice("template-dra", nvidiaDRA, builder.Devices("gpu-", 8)...)))
	for seed := int64(0); seed < 6; seed++ {
		o := opts("random")
		o.Seed = seed
		if got := summary(w.plan(o, t0, builder.Pod("web").CPU("1").Build())); got != "cpu+1" {
			t.Fatalf("seed %d: scale-ups = %q, want cpu+1", seed, got)
		}
	}
}

// TestDRANodeBeforeItsDriverIsUpcoming: a node of the DRA group that has
// registered but not published its slices (nor become Ready) takes the
// pending pod: no second node.
func TestDRANodeBeforeItsDriverIsUpcoming(t *testing.T) {
	w := draWorld(t)
	g := *w.snap.NodeGroup("dra")
	g.TargetSize = 1
	if err := w.snap.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	n := builder.Node("dra-1").CPU("32").Memory("128Gi").Taint(v1.TaintNodeNotReady, "", v1.TaintEffectNoSchedule).Build()
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	w.node("dra", n, t0)
	pod := builder.Pod("train").CPU("1").ResourceClaimTemplate("gpu", "one-gpu").Build()
	plan := w.plan(opts("random"), t0.Add(time.Minute), pod)
	if len(plan.ScaleUps) != 0 || len(plan.WillSchedule) != 1 || fmt.Sprint(plan.AwaitingGPU) != "[dra-1]" {
		t.Fatalf("scale-ups %q, will schedule %d, awaiting %v; want none, 1, [dra-1]", summary(plan), len(plan.WillSchedule), plan.AwaitingGPU)
	}
	if len(w.snap.NodeResourceSlices("dra-1")) != 0 {
		t.Error("planning left the simulated slices in the snapshot")
	}
}

// TestLeastWastePrefersTheDRAGroupTheClaimsFill: 2 one-GPU pods fill a
// 2-GPU group and leave 6 of 8 idle on the other.
func TestLeastWastePrefersTheDRAGroupTheClaimsFill(t *testing.T) {
	w := draWorld(t).group(builder.NodeGroup("dra-small").Template(builder.Node("template-dra-small").CPU("32").Memory("128Gi").Build()).
		TemplateSlices(builder.NodeSlice("template-dra-small", nvidiaDRA, builder.Devices("gpu-", 2)...)))
	pods := replicas(2, func(i int) *v1.Pod {
		return owned(builder.Pod(fmt.Sprintf("t%d", i)).CPU("1").ResourceClaimTemplate("gpu", "one-gpu").Build(), "t")
	})
	for seed := int64(0); seed < 6; seed++ {
		o := opts("least-waste")
		o.Seed = seed
		if got := summary(w.plan(o, t0, pods...)); got != "dra-small+1" {
			t.Fatalf("seed %d: scale-ups = %q, want dra-small+1", seed, got)
		}
	}
}
