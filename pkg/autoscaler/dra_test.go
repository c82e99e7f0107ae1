package autoscaler_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

const draDriver = "gpu.example.com"

// draSnapshot is a group of two registered DRA nodes: n1 with 1 GPU, free,
// and n2 with 4 GPUs, one held by the claim of pod "small".
func draSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	setGroup(t, s, "gpu", 2, builder.Node("t").CPU("4").Build())
	must(s.SetDeviceClass(builder.DeviceClass("gpu", fmt.Sprintf("device.driver == %q", draDriver))))
	spec := builder.Claim("spec").Request("gpu", "gpu", 1).Build()
	must(s.SetResourceClaimTemplate(builder.ClaimTemplate("one-gpu", spec)))
	for name, gpus := range map[string]int{"n1": 1, "n2": 4} {
		must(s.AddNodeInGroup(builder.Node(name).CPU("4").Build(), "gpu"))
		must(s.SetResourceSlice(builder.NodeSlice(name, draDriver, builder.Devices("gpu", gpus)...)))
	}
	small := owned(builder.Pod("small").CPU("100m").OnNode("n2").ResourceClaim("small-gpu").Build())
	must(s.SetResourceClaim(builder.Claim("small-gpu").Request("gpu", "gpu", 1).Allocated("n2", draDriver, []string{"gpu0"}, small).Build()))
	must(s.AddPod(small))
	return s
}

// A pending pod whose claim will get n1's only GPU keeps that GPU: the
// scale-down simulation must not move n2's pod onto it and remove n2, which
// would leave two pods for one GPU.
func TestPendingPodKeepsTheDevicesItWillUse(t *testing.T) {
	removals := func(pending []*v1.Pod) string {
		a := newAutoscaler(t)
		s := draSnapshot(t)
		for m := 0; m <= 30; m++ {
			plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, Pending: pending})
			if got := only(plan, "remove"); got != "" {
				return got
			}
		}
		return ""
	}
	// The pending pods have no controller, so n1, where they fit first,
	// cannot be removed once they are placed there. One without a claim
	// leaves n1's GPU free: n2 (1 of 4 GPUs used) goes, its pod moved to
	// n1's GPU.
	cpuOnly := builder.Pod("big").CPU("100m").Build()
	if got := removals([]*v1.Pod{cpuOnly}); got != "remove n2" {
		t.Fatalf("with a pending pod without claims: %q, want remove n2", got)
	}
	// One whose claim takes n1's GPU leaves n2's pod nowhere to go: both
	// nodes stay.
	pending := builder.Pod("big").CPU("100m").ResourceClaimTemplate("gpu", "one-gpu").Build()
	if got := removals([]*v1.Pod{pending}); got != "" {
		t.Fatalf("%q while a pending pod's claim needs n1's GPU", got)
	}
}
