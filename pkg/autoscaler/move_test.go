package autoscaler

import (
	"testing"

	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// A pod a removal moves takes its claim's devices on the new node, so that
// consolidation planned after it does not count them free.
func TestMoveEvictedAllocatesClaims(t *testing.T) {
	const driver = "gpu.example.com"
	s := snapshot.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetDeviceClass(builder.DeviceClass("gpu", `device.driver == "gpu.example.com"`)))
	for _, n := range []string{"a", "b"} {
		must(s.AddNode(builder.Node(n).CPU("4").Build()))
		must(s.SetResourceSlice(builder.NodeSlice(n, driver, builder.Devices("gpu", 1)...)))
	}
	pod := builder.Pod("p").CPU("100m").OnNode("a").ResourceClaim("p-gpu").Build()
	must(s.SetResourceClaim(builder.Claim("p-gpu").Request("gpu", "gpu", 1).Allocated("a", driver, []string{"gpu0"}, pod).Build()))
	must(s.AddPod(pod))

	must(moveEvicted(s, []disruption.Move{{Pod: pod, To: "b"}}))
	if s.NodeOf(s.Pod("default", "p")).Name() != "b" {
		t.Fatalf("the pod is not on b")
	}
	if !s.DeviceAllocated(structured.MakeDeviceID(driver, "b", "gpu0")) || s.DeviceAllocated(structured.MakeDeviceID(driver, "a", "gpu0")) {
		t.Errorf("the moved pod's claim holds %d devices, want b's gpu0 alone: %+v", s.AllocatedDeviceCount(), s.ResourceClaim("default", "p-gpu").Status)
	}
}
