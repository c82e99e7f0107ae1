package snapshot_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

const driver = "gpu.nvidia.com"

func draSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	must(t, s.AddNode(builder.Node("n1").Build()))
	must(t, s.AddNode(builder.Node("n2").Build()))
	must(t, s.SetDeviceClass(builder.DeviceClass("gpu", `device.driver == "gpu.nvidia.com"`)))
	must(t, s.SetResourceSlice(builder.NodeSlice("n1", driver, builder.Devices("gpu-", 2)...)))
	must(t, s.SetResourceSlice(builder.NodeSlice("n2", driver, builder.Devices("gpu-", 2)...)))
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func allocation(node string, devices ...string) *resourceapi.AllocationResult {
	return builder.Claim("x").Request("gpu", "gpu", 1).Allocated(node, driver, devices).Build().Status.Allocation
}

func TestDRAObjectsAreValidated(t *testing.T) {
	s := snapshot.New()
	node := "n1"
	bad := []struct {
		name string
		err  error
		want string
	}{
		{"claim without mode", s.SetResourceClaim(func() *resourceapi.ResourceClaim {
			c := builder.Claim("c").Request("gpu", "gpu", 1).Build()
			c.Spec.Devices.Requests[0].Exactly.AllocationMode = ""
			return c
		}()), `spec.devices.requests[0].exactly.allocationMode: want ExactCount or All, got ""`},
		{"claim with count 0", s.SetResourceClaim(builder.Claim("c").Request("gpu", "gpu", 0).Build()),
			"spec.devices.requests[0].exactly.count: must be at least 1"},
		{"claim without class", s.SetResourceClaim(builder.Claim("c").Request("gpu", "", 1).Build()),
			"spec.devices.requests[0].exactly.deviceClassName: must not be empty"},
		{"empty CEL", s.SetDeviceClass(builder.DeviceClass("c", "")), "device class c: spec.selectors[0].cel.expression"},
		{"slice without node", s.SetResourceSlice(func() *resourceapi.ResourceSlice {
			sl := builder.NodeSlice("n1", driver)
			sl.Spec.NodeName = nil
			return sl
		}()), "exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection must be set, got 0"},
		{"duplicate device", s.SetResourceSlice(builder.NodeSlice(node, driver, builder.Devices("gpu-", 1)[0], builder.Devices("gpu-", 1)[0])),
			`spec.devices[1].name: duplicate device "gpu-0"`},
	}
	for _, tc := range bad {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, tc.err, tc.want)
		}
	}
	g := builder.NodeGroup("g").Template(builder.Node("t").Build()).Build()
	other := "elsewhere"
	sl := builder.NodeSlice("t", driver)
	sl.Spec.NodeName = &other
	g.TemplateSlices = append(g.TemplateSlices, sl)
	if err := s.SetNodeGroup(g); err == nil || !strings.Contains(err.Error(), `templateSlices[0]: spec.nodeName: must name the template node "t"`) {
		t.Errorf("template slice for another node: err = %v", err)
	}
}

func TestSlicesByNode(t *testing.T) {
	s := draSnapshot(t)
	shared := builder.NodeSlice("net", "dra.net", builder.Devices("nic-", 1)...)
	shared.Spec.NodeName = nil
	yes := true
	shared.Spec.AllNodes = &yes
	must(t, s.SetResourceSlice(shared))
	ns := s.SlicesFor("n1")
	if len(ns.Local) != 1 || len(ns.Shared) != 1 || ns.Len() != 2 {
		t.Fatalf("slices for n1: %d local, %d shared", len(ns.Local), len(ns.Shared))
	}
	s.Fork()
	must(t, s.SetResourceSlice(builder.NodeSlice("n1", "gpu.amd.com", builder.Devices("amd-", 1)...)))
	must(t, s.RemoveResourceSlice(shared.Name))
	if ns := s.SlicesFor("n1"); len(ns.Local) != 2 || len(ns.Shared) != 0 {
		t.Fatalf("after changes: %d local, %d shared", len(ns.Local), len(ns.Shared))
	}
	must(t, s.Revert())
	if ns := s.SlicesFor("n1"); len(ns.Local) != 1 || len(ns.Shared) != 1 {
		t.Errorf("after revert: %d local, %d shared", len(ns.Local), len(ns.Shared))
	}
	if got := len(s.NodeResourceSlices("n2")); got != 1 {
		t.Errorf("n2 has %d slices", got)
	}
}

// TestClaimAllocationsForkAndRevert: allocations made while placing pods in
// a simulation hold devices, and reverting gives them back exactly.
func TestClaimAllocationsForkAndRevert(t *testing.T) {
	s := draSnapshot(t)
	must(t, s.SetResourceClaim(builder.Claim("c1").Request("gpu", "gpu", 1).Build()))
	pod := builder.Pod("p1").CPU("1").ResourceClaim("c1").Build()
	pi, err := snapshot.NewPodInfo(pod)
	must(t, err)
	id := structured.MakeDeviceID(driver, "n1", "gpu-0")

	s.Fork()
	must(t, s.AddPodInfoWithClaims(pi, "n1", []*resourceapi.AllocationResult{allocation("n1", "gpu-0")}))
	c := s.ResourceClaim("default", "c1")
	if c.Status.Allocation == nil || !snapshot.ReservedOnlyFor(c, pod) || !s.DeviceAllocated(id) {
		t.Fatalf("after placing: allocation %v, reserved %v, device held %v", c.Status.Allocation, c.Status.ReservedFor, s.DeviceAllocated(id))
	}
	s.Fork()
	must(t, s.RemovePod("default", "p1"))
	if c := s.ResourceClaim("default", "c1"); c.Status.Allocation != nil || len(c.Status.ReservedFor) != 0 || s.DeviceAllocated(id) {
		t.Fatalf("after removing the only pod: claim still allocated or reserved (%v)", c.Status)
	}
	must(t, s.Revert())
	if c := s.ResourceClaim("default", "c1"); c.Status.Allocation == nil || !s.DeviceAllocated(id) {
		t.Fatal("inner revert lost the allocation")
	}
	must(t, s.Revert())
	if c := s.ResourceClaim("default", "c1"); c.Status.Allocation != nil || len(c.Status.ReservedFor) != 0 || s.DeviceAllocated(id) || s.AllocatedDeviceCount() != 0 {
		t.Errorf("after revert: claim %v, %d devices held", c.Status, s.AllocatedDeviceCount())
	}
}

func TestSharedClaimStaysAllocatedWhileHeld(t *testing.T) {
	s := draSnapshot(t)
	a := builder.Pod("a").ResourceClaim("shared").OnNode("n1").Build()
	b := builder.Pod("b").ResourceClaim("shared").OnNode("n1").Build()
	must(t, s.SetResourceClaim(builder.Claim("shared").Request("gpu", "gpu", 1).Allocated("n1", driver, []string{"gpu-1"}, a, b).Build()))
	must(t, s.AddPod(a))
	must(t, s.AddPod(b))
	if got := len(s.ResourceClaim("default", "shared").Status.ReservedFor); got != 2 {
		t.Fatalf("adding running pods changed the reservations: %d", got)
	}
	must(t, s.RemovePod("default", "a"))
	if c := s.ResourceClaim("default", "shared"); c.Status.Allocation == nil || !snapshot.ReservedOnlyFor(c, b) {
		t.Fatalf("claim released too early: %v", c.Status)
	}
	must(t, s.RemoveNode("n1"))
	if c := s.ResourceClaim("default", "shared"); c.Status.Allocation != nil {
		t.Errorf("removing the node kept the claim allocated")
	}
}

func TestPodClaims(t *testing.T) {
	s := draSnapshot(t)
	spec := builder.Claim("spec").Request("gpu", "gpu", 2).Build()
	must(t, s.SetResourceClaimTemplate(builder.ClaimTemplate("two-gpus", spec)))
	generated := builder.Pod("gen").ResourceClaimTemplate("gpus", "two-gpus").GeneratedClaim("gpus", "gen-gpus-x7k").Build()
	must(t, s.SetResourceClaim(builder.Claim("gen-gpus-x7k").Request("gpu", "gpu", 2).OwnedBy(generated).Build()))

	claims, err := s.PodClaims(generated)
	if err != nil || len(claims) != 1 || claims[0].Claim == nil || !claims[0].Generated || claims[0].Name != "gen-gpus-x7k" {
		t.Fatalf("generated claim: %+v, %v", claims, err)
	}
	fresh := builder.Pod("fresh").ResourceClaimTemplate("gpus", "two-gpus").Build()
	claims, err = s.PodClaims(fresh)
	if err != nil || len(claims) != 1 || claims[0].Claim != nil || claims[0].Template == nil || claims[0].Spec().Devices.Requests[0].Exactly.Count != 2 {
		t.Fatalf("claim still to be made: %+v, %v", claims, err)
	}
	notNeeded := builder.Pod("skip").ResourceClaimTemplate("gpus", "two-gpus").Build()
	notNeeded.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpus"}}
	if claims, err := s.PodClaims(notNeeded); err != nil || len(claims) != 0 {
		t.Errorf("entry the controller left without a claim: %+v, %v", claims, err)
	}
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{builder.Pod("x").ResourceClaim("missing").Build(), "resourceclaim default/missing not found"},
		{builder.Pod("y").ResourceClaimTemplate("gpus", "no-such").Build(), "resourceclaimtemplate default/no-such not found"},
	} {
		if _, err := s.PodClaims(tc.pod); err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.pod.Name, err, tc.want)
		}
	}
}

// TestTemplateClaimMadeForPlacedPod: a pod whose claim the controller has
// not made yet gets one, holding its devices, and loses it with the pod.
func TestTemplateClaimMadeForPlacedPod(t *testing.T) {
	s := draSnapshot(t)
	must(t, s.SetResourceClaimTemplate(builder.ClaimTemplate("one-gpu", builder.Claim("spec").Request("gpu", "gpu", 1).Build())))
	pod := builder.Pod("p").ResourceClaimTemplate("gpu", "one-gpu").Build()
	pi, err := snapshot.NewPodInfo(pod)
	must(t, err)
	s.Fork()
	must(t, s.AddPodInfoWithClaims(pi, "n2", []*resourceapi.AllocationResult{allocation("n2", "gpu-1")}))
	name := snapshot.SimulatedClaimName("p", "gpu")
	c := s.ResourceClaim("default", name)
	if c == nil || !snapshot.IsSimulatedClaim(c) || c.Status.Allocation == nil || !s.DeviceAllocated(structured.MakeDeviceID(driver, "n2", "gpu-1")) {
		t.Fatalf("made claim %v", c)
	}
	must(t, s.RemovePod("default", "p"))
	if s.ResourceClaim("default", name) != nil || s.AllocatedDeviceCount() != 0 {
		t.Errorf("the made claim outlived its pod")
	}
	must(t, s.Revert())
	if s.ResourceClaim("default", name) != nil || s.AllocatedDeviceCount() != 0 {
		t.Errorf("revert left the made claim")
	}
}

func TestAddPodInfoWithClaimsRefusesMismatchedAllocations(t *testing.T) {
	s := draSnapshot(t)
	pi, err := snapshot.NewPodInfo(builder.Pod("p").ResourceClaim("a").ResourceClaim("b").Build())
	must(t, err)
	err = s.AddPodInfoWithClaims(pi, "n1", []*resourceapi.AllocationResult{nil})
	if err == nil || !strings.Contains(err.Error(), "1 allocations for 2 resource claims") {
		t.Errorf("err = %v", err)
	}
}

// Exported and built again, a snapshot keeps its DRA objects: the claims
// with the allocations and reservations they had, the devices held.
func TestDRAObjectsExportAndImport(t *testing.T) {
	s := draSnapshot(t)
	must(t, s.SetResourceClaimTemplate(builder.ClaimTemplate("one", builder.Claim("spec").Request("gpu", "gpu", 1).Build())))
	pod := builder.Pod("p").OnNode("n1").ResourceClaim("c").Build()
	must(t, s.SetResourceClaim(builder.Claim("c").Request("gpu", "gpu", 1).Allocated("n1", driver, []string{"gpu-0"}, pod).Build()))
	must(t, s.AddPod(pod))
	o := s.Export()
	if len(o.DeviceClasses) == 0 || len(o.ResourceClaimTemplates) != 1 || len(o.ResourceClaims) != 1 || len(o.ResourceSlices) == 0 {
		t.Fatalf("exported %d classes, %d templates, %d claims, %d slices", len(o.DeviceClasses), len(o.ResourceClaimTemplates),
			len(o.ResourceClaims), len(o.ResourceSlices))
	}
	back, err := snapshot.FromObjects(o)
	must(t, err)
	if got, want := back.Export(), o; !reflect.DeepEqual(got, want) {
		t.Fatalf("built again: %+v\nwant %+v", got, want)
	}
	if back.AllocatedDeviceCount() != s.AllocatedDeviceCount() || back.AllocatedDeviceCount() == 0 {
		t.Errorf("%d devices held after import, want %d", back.AllocatedDeviceCount(), s.AllocatedDeviceCount())
	}
}
