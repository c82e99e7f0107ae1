package gce

import (
	"context"
	"reflect"
	"testing"

	compute "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func TestUnknownMachineTypeIsReadOnceFromTheAPI(t *testing.T) {
	e := newEnv(t)
	e.f.machines[testProject+"/"+testZone+"/a4-highgpu-8g"] = &compute.MachineType{Name: "a4-highgpu-8g", GuestCpus: 224, MemoryMb: 3968 * 1024,
		Accelerators: []*compute.MachineTypeAccelerators{{GuestAcceleratorType: "nvidia-b200", GuestAcceleratorCount: 8}}}
	// A regional instance template, as newer GKE versions write.
	path := "projects/" + testProject + "/regions/us-central1/instanceTemplates/b200"
	e.f.templates[path] = &compute.InstanceTemplate{Name: "b200", Properties: props("a4-highgpu-8g").build()}
	e.f.addMIG(testProject, testZone, "b200-a", "https://www.googleapis.com/compute/v1/"+path, 0)
	e.f.addMIG(testProject, testZone, "b200-b", "https://www.googleapis.com/compute/v1/"+path, 0)
	p := e.provider(t, Options{
		Config:     &Config{Prices: PriceOverrides{MachineTypes: map[string]Price{"a4-highgpu-8g": {OnDemand: 100, Spot: 30}}}},
		NodeGroups: []NodeGroupSpec{{Max: 2, URL: migURL("b200-a")}, {Max: 2, URL: migURL("b200-b")}},
	})
	refresh(t, p)
	gs := p.NodeGroups()
	if len(gs) != 2 {
		t.Fatalf("groups %+v, problems %v", gs, p.Problems())
	}
	n := gs[0].Template
	if gpu.Allocatable(n) != 8 || n.Labels[gpu.LabelGKEAccelerator] != "nvidia-b200" || gs[0].PricePerHour != 100 {
		t.Errorf("template: gpus %d, label %q, price %g", gpu.Allocatable(n), n.Labels[gpu.LabelGKEAccelerator], gs[0].PricePerHour)
	}
	if c := e.f.callsOf("machineTypes"); len(c) != 1 || c[0].Path != "projects/gpu-project/zones/us-central1-a/machineTypes/a4-highgpu-8g" {
		t.Errorf("machineTypes.get calls: %+v", c)
	}
}

func TestKubeReservedLowersAllocatable(t *testing.T) {
	shape, err := shapeFromTemplate(context.Background(), &compute.InstanceTemplate{Name: "t",
		Properties: props("n1-standard-4").kubeEnv("AUTOSCALER_ENV_VARS: kube_reserved=cpu=80m,memory=2Gi\n").build()},
		testZone, PriceOverrides{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := shape.node("g", testZone, "pool")
	cpu, mem := n.Status.Allocatable[v1.ResourceCPU], n.Status.Allocatable[v1.ResourceMemory]
	if cpu.Cmp(resource.MustParse("3920m")) != 0 || mem.Cmp(resource.MustParse("13Gi")) != 0 {
		t.Errorf("allocatable cpu %s memory %s, want 3920m and 13Gi", cpu.String(), mem.String())
	}
	if capCPU := n.Status.Capacity[v1.ResourceCPU]; capCPU.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("capacity cpu %s", capCPU.String())
	}
	if n.Labels[LabelGKENodePool] != "pool" {
		t.Errorf("pool label: %v", n.Labels)
	}
}

func TestAcceleratorOnABundledTypeMustMatch(t *testing.T) {
	_, err := shapeFromTemplate(context.Background(), &compute.InstanceTemplate{Name: "t",
		Properties: props("g2-standard-4").accelerators("nvidia-tesla-t4", 1).build()}, testZone, PriceOverrides{}, nil)
	if err == nil || err.Error() != "instance template t: guest accelerator nvidia-tesla-t4 on machine type g2-standard-4, which comes with nvidia-l4" {
		t.Errorf("got %v", err)
	}
}

func TestRegionZones(t *testing.T) {
	e := newEnv(t)
	e.f.zones = []*compute.Zone{{Name: "us-central1-f", Status: "UP"}, {Name: "us-central1-a", Status: "UP"}, {Name: "us-central1-d", Status: "DOWN"}}
	got, err := RegionZones(context.Background(), e.f.service(), testProject, "us-central1")
	if err != nil || !reflect.DeepEqual(got, []string{"us-central1-a", "us-central1-f"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if c := e.f.callsOf("zones"); len(c) != 1 || c[0].Query.Get("filter") != `name eq "us-central1-.*"` {
		t.Errorf("zones.list calls: %+v", c)
	}
}
