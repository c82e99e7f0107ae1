package predicates_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

const nvidia = "gpu.nvidia.com"

// draCluster: node a has two A100s, node b four L4s, node c no devices.
func draCluster(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	for _, n := range []string{"a", "b", "c"} {
		mustOK(t, s.AddNode(builder.Node(n).Build()))
	}
	gpu := func(name, model string) *builder.DeviceBuilder {
		return builder.Device(name).Attr("type", "gpu").Attr("productName", model).Capacity("memory", "40Gi")
	}
	mustOK(t, s.SetResourceSlice(builder.NodeSlice("a", nvidia, gpu("gpu-0", "NVIDIA A100").Build(), gpu("gpu-1", "NVIDIA A100").Build())))
	mustOK(t, s.SetResourceSlice(builder.NodeSlice("b", nvidia, gpu("gpu-0", "NVIDIA L4").Build(), gpu("gpu-1", "NVIDIA L4").Build(),
		gpu("gpu-2", "NVIDIA L4").Build(), gpu("gpu-3", "NVIDIA L4").Build())))
	mustOK(t, s.SetDeviceClass(builder.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`)))
	mustOK(t, s.SetDeviceClass(builder.DeviceClass("a100", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100"`)))
	return s
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// verdicts checks pod against every node: "a:ok b:CannotAllocate c:..."
func verdicts(t *testing.T, s *snapshot.Snapshot, pod *v1.Pod) string {
	t.Helper()
	pc, err := predicates.New(s).Prepare(pod)
	mustOK(t, err)
	var out []string
	for _, ni := range s.Nodes() {
		r := pc.Check(ni)
		v := "ok"
		if !r.Fits() {
			v = reasonName(r.Reason)
		}
		out = append(out, ni.Name()+":"+v)
	}
	return strings.Join(out, " ")
}

func reasonName(r predicates.Reason) string {
	switch r {
	case predicates.ReasonClaimUnavailable:
		return "unavailable"
	case predicates.ReasonClaimNotOnNode:
		return "elsewhere"
	case predicates.ReasonCannotAllocate:
		return "no-devices"
	case predicates.ReasonInvalidClaim:
		return "invalid"
	}
	return fmt.Sprint(r)
}

func TestDynamicResources(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*snapshot.Snapshot)
		pod   *v1.Pod
		want  string
	}{
		{"a pod without claims is not judged by devices", nil, builder.Pod("p").Build(), "a:ok b:ok c:ok"},
		{"count within the node's devices", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("two").Request("gpus", "gpu.nvidia.com", 2).Build()))
		}, builder.Pod("p").ResourceClaim("two").Build(), "a:ok b:ok c:no-devices"},
		{"count above some nodes' devices", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("three").Request("gpus", "gpu.nvidia.com", 3).Build()))
		}, builder.Pod("p").ResourceClaim("three").Build(), "a:no-devices b:ok c:no-devices"},
		{"the class's CEL selector picks the model", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("big").Request("gpu", "a100", 1).Build()))
		}, builder.Pod("p").ResourceClaim("big").Build(), "a:ok b:no-devices c:no-devices"},
		{"the request's CEL selector narrows further", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("l4").Request("gpu", "gpu.nvidia.com", 1,
				`device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"`).Build()))
		}, builder.Pod("p").ResourceClaim("l4").Build(), "a:no-devices b:ok c:no-devices"},
		{"mode All wants every matching device free", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("all").RequestAll("gpus", "gpu.nvidia.com").Build()))
			other := builder.Pod("busy").OnNode("b").ResourceClaim("held").Build()
			mustOK(t, s.SetResourceClaim(builder.Claim("held").Request("gpu", "gpu.nvidia.com", 1).Allocated("b", nvidia, []string{"gpu-2"}, other).Build()))
			mustOK(t, s.AddPod(other))
		}, builder.Pod("p").ResourceClaim("all").Build(), "a:ok b:no-devices c:no-devices"},
		{"an allocated claim is available where it was allocated only", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("mine").Request("gpu", "gpu.nvidia.com", 1).Allocated("b", nvidia, []string{"gpu-0"}).Build()))
		}, builder.Pod("p").ResourceClaim("mine").Build(), "a:elsewhere b:ok c:elsewhere"},
		{"a missing claim fails everywhere", nil, builder.Pod("p").ResourceClaim("nope").Build(), "a:unavailable b:unavailable c:unavailable"},
		{"a missing device class fails everywhere", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("odd").Request("gpu", "tpu", 1).Build()))
		}, builder.Pod("p").ResourceClaim("odd").Build(), "a:unavailable b:unavailable c:unavailable"},
		{"a template claim not made yet is allocated from the template", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaimTemplate(builder.ClaimTemplate("three-gpus", builder.Claim("t").Request("gpus", "gpu.nvidia.com", 3).Build())))
		}, builder.Pod("p").ResourceClaimTemplate("gpus", "three-gpus").Build(), "a:no-devices b:ok c:no-devices"},
		{"a generated claim owned by another pod is refused", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("stolen").Request("gpu", "gpu.nvidia.com", 1).OwnedBy(builder.Pod("other").Build()).Build()))
		}, builder.Pod("p").ResourceClaimTemplate("gpu", "any").GeneratedClaim("gpu", "stolen").Build(), "a:unavailable b:unavailable c:unavailable"},
		{"a CEL expression that does not compile fails everywhere", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("broken").Request("gpu", "gpu.nvidia.com", 1, `device.nope(`).Build()))
		}, builder.Pod("p").ResourceClaim("broken").Build(), "a:invalid b:invalid c:no-devices"},
		{"the allocator's error outranks a claim allocated elsewhere, as the scheduler's cycle aborts", func(s *snapshot.Snapshot) {
			mustOK(t, s.SetResourceClaim(builder.Claim("mine").Request("gpu", "gpu.nvidia.com", 1).Allocated("b", nvidia, []string{"gpu-0"}).Build()))
			mustOK(t, s.SetResourceClaim(builder.Claim("broken").Request("gpu", "gpu.nvidia.com", 1, `device.nope(`).Build()))
		}, builder.Pod("p").ResourceClaim("mine").ResourceClaim("broken").Build(), "a:invalid b:invalid c:elsewhere"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := draCluster(t)
			if tc.setup != nil {
				tc.setup(s)
			}
			if got := verdicts(t, s, tc.pod); got != tc.want {
				t.Errorf("verdicts %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlaceAllocatesForEveryPodOfAClass: one PodCheck places pods of one
// class, each with its own claim from the template, until node a's two
// GPUs are taken; reverting frees them.
func TestPlaceAllocatesForEveryPodOfAClass(t *testing.T) {
	s := draCluster(t)
	mustOK(t, s.SetResourceClaimTemplate(builder.ClaimTemplate("a100", builder.Claim("t").Request("gpu", "a100", 1).Build())))
	pods := make([]*snapshot.PodInfo, 3)
	for i := range pods {
		pi, err := snapshot.NewPodInfo(builder.Pod(fmt.Sprintf("p%d", i)).ResourceClaimTemplate("gpu", "a100").Build())
		mustOK(t, err)
		pods[i] = pi
	}
	pc := predicates.New(s).PreparePodInfo(pods[0])
	a := s.Node("a")
	s.Fork()
	for i, pi := range pods[:2] {
		if r := pc.Check(a); !r.Fits() {
			t.Fatalf("pod %d: %s", i, r)
		}
		mustOK(t, pc.Place(pi, a))
	}
	if r := pc.Check(a); r.Reason != predicates.ReasonCannotAllocate {
		t.Fatalf("third pod on a full node: %v", r)
	}
	if err := pc.Place(pods[2], a); err == nil {
		t.Fatal("Place bound a pod that does not fit")
	}
	if got := s.AllocatedDeviceCount(); got != 2 {
		t.Errorf("%d devices held, want 2", got)
	}
	c0 := s.ResourceClaim("default", snapshot.SimulatedClaimName("p0", "gpu"))
	c1 := s.ResourceClaim("default", snapshot.SimulatedClaimName("p1", "gpu"))
	if c0 == nil || c1 == nil || c0.Status.Allocation.Devices.Results[0].Device == c1.Status.Allocation.Devices.Results[0].Device {
		t.Fatalf("claims %v and %v do not hold distinct devices", c0, c1)
	}
	mustOK(t, s.Revert())
	if s.AllocatedDeviceCount() != 0 || s.ResourceClaim("default", snapshot.SimulatedClaimName("p0", "gpu")) != nil {
		t.Errorf("revert kept allocations")
	}
	if r := pc.Check(a); !r.Fits() {
		t.Errorf("after revert: %v", r)
	}
}

// TestPlaceReservesAllocatedClaims: a pod whose claim is allocated already
// is bound to its node and holds the claim.
func TestPlaceReservesAllocatedClaims(t *testing.T) {
	s := draCluster(t)
	mustOK(t, s.SetResourceClaim(builder.Claim("c").Request("gpu", "gpu.nvidia.com", 1).Allocated("b", nvidia, []string{"gpu-3"}).Build()))
	pod := builder.Pod("p").ResourceClaim("c").Build()
	pc, err := predicates.New(s).Prepare(pod)
	mustOK(t, err)
	b := s.Node("b")
	mustOK(t, pc.Place(pc.PodInfo(), b))
	if c := s.ResourceClaim("default", "c"); !snapshot.ReservedOnlyFor(c, pod) || c.Status.Allocation.Devices.Results[0].Device != "gpu-3" {
		t.Errorf("claim after placing: %+v", c.Status)
	}
}

func TestPartitionableDevicesFollowTheFeatureGate(t *testing.T) {
	s := snapshot.New()
	mustOK(t, s.AddNode(builder.Node("n").Build()))
	// Counters and the devices that consume them are separate slices of
	// one pool.
	devices := builder.NodeSlice("n", nvidia, partitionDevices()...)
	counters := builder.NodeSlice("n", nvidia)
	counters.Name += "-counters"
	counters.Spec.SharedCounters = partitionCounters()
	devices.Spec.Pool.ResourceSliceCount, counters.Spec.Pool.ResourceSliceCount = 2, 2
	mustOK(t, s.SetResourceSlice(devices))
	mustOK(t, s.SetResourceSlice(counters))
	mustOK(t, s.SetDeviceClass(builder.DeviceClass("mig", `device.attributes["gpu.nvidia.com"].type == "mig"`)))
	mustOK(t, s.SetResourceClaim(builder.Claim("slices").Request("mig", "mig", 2).Build()))
	pod := builder.Pod("p").ResourceClaim("slices").Build()
	if got := verdicts(t, s, pod); got != "n:no-devices" {
		t.Errorf("gate off: %s, want devices with counters ignored", got)
	}
	f := snapshot.DefaultDRAFeatures()
	f.PartitionableDevices = true
	s.SetDRAFeatures(f)
	if got := verdicts(t, s, pod); got != "n:ok" {
		t.Errorf("gate on: %s", got)
	}
	mustOK(t, s.SetResourceClaim(builder.Claim("slices").Request("mig", "mig", 3).Build()))
	if got := verdicts(t, s, pod); got != "n:no-devices" {
		t.Errorf("three 4g slices of one GPU: %s, want the shared counter to refuse", got)
	}
}

// partitionDevices: three 4g MIG devices of one GPU, each taking four of
// its eight memory slices, as the NVIDIA DRA driver publishes partitions
// under DRAPartitionableDevices.
func partitionDevices() []resourceapi.Device {
	var out []resourceapi.Device
	for i := 0; i < 3; i++ {
		d := builder.Device(fmt.Sprintf("gpu-0-mig-4g-%d", i)).Attr("type", "mig").Attr("profile", "4g.20gb").Build()
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0",
			Counters: map[string]resourceapi.Counter{"memory-slices": {Value: resource.MustParse("4")}}}}
		out = append(out, d)
	}
	return out
}

func partitionCounters() []resourceapi.CounterSet {
	return []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
		"memory-slices": {Value: resource.MustParse("8")}}}}
}

// TestRequestAllOverSharedCountersIsRefused: a request for all three 4g
// partitions of one GPU needs twelve of its eight memory slices. The v0.35
// allocator panicked here (a nil pool); from v0.37 it refuses the claim, so
// the node is reported as having no matching free devices.
func TestRequestAllOverSharedCountersIsRefused(t *testing.T) {
	s := snapshot.New()
	mustOK(t, s.AddNode(builder.Node("n").Build()))
	devices := builder.NodeSlice("n", nvidia, partitionDevices()...)
	counters := builder.NodeSlice("n", nvidia)
	counters.Name += "-counters"
	counters.Spec.SharedCounters = partitionCounters()
	devices.Spec.Pool.ResourceSliceCount, counters.Spec.Pool.ResourceSliceCount = 2, 2
	mustOK(t, s.SetResourceSlice(devices))
	mustOK(t, s.SetResourceSlice(counters))
	mustOK(t, s.SetDeviceClass(builder.DeviceClass("mig", `device.attributes["gpu.nvidia.com"].type == "mig"`)))
	mustOK(t, s.SetResourceClaim(builder.Claim("every").RequestAll("mig", "mig").Build()))
	f := snapshot.DefaultDRAFeatures()
	f.PartitionableDevices = true
	s.SetDRAFeatures(f)
	pc, err := predicates.New(s).Prepare(builder.Pod("p").ResourceClaim("every").Build())
	mustOK(t, err)
	if r := pc.Check(s.Node("n")); r.Reason != predicates.ReasonCannotAllocate {
		t.Errorf("check = %v, want ReasonCannotAllocate: three partitions overdraw the shared counters", r)
	}
}

func TestCheckerPlace(t *testing.T) {
	s := draCluster(t)
	mustOK(t, s.SetResourceClaim(builder.Claim("c").Request("gpu", "a100", 2).Build()))
	pi, err := snapshot.NewPodInfo(builder.Pod("p").ResourceClaim("c").Build())
	mustOK(t, err)
	c := predicates.New(s)
	if r, err := c.Place(pi, s.Node("b")); err != nil || r.Reason != predicates.ReasonCannotAllocate {
		t.Fatalf("on b (no A100): %v, %v", r, err)
	}
	if s.Pod("default", "p") != nil {
		t.Fatal("a pod that does not fit was bound")
	}
	if r, err := c.Place(pi, s.Node("a")); err != nil || !r.Fits() || s.AllocatedDeviceCount() != 2 {
		t.Fatalf("on a: %v, %v, %d devices held", r, err, s.AllocatedDeviceCount())
	}
}
