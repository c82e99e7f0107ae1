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
	e.f.machines[testProject+"/"+testZone+"/a3-edgegpu-8g"] = &compute.MachineType{Name: "a3-edgegpu-8g", GuestCpus: 208, MemoryMb: 1872 * 1024,
		Accelerators: []*compute.MachineTypeAccelerators{{GuestAcceleratorType: "nvidia-h100-80gb", GuestAcceleratorCount: 8}}}
	// A regional instance template, as newer GKE versions write.
	path := "projects/" + testProject + "/regions/us-central1/instanceTemplates/b200"
	e.f.templates[path] = &compute.InstanceTemplate{Name: "b200", Properties: props("a3-edgegpu-8g").build()}
	e.f.addMIG(testProject, testZone, "b200-a", "https://www.googleapis.com/compute/v1/"+path, 0)
	e.f.addMIG(testProject, testZone, "b200-b", "https://www.googleapis.com/compute/v1/"+path, 0)
	p := e.provider(t, Options{
		Config:     &Config{Prices: PriceOverrides{MachineTypes: map[string]Price{"a3-edgegpu-8g": {OnDemand: 100, Spot: 30}}}},
		NodeGroups: []NodeGroupSpec{{Max: 2, URL: migURL("b200-a")}, {Max: 2, URL: migURL("b200-b")}},
	})
	refresh(t, p)
	gs := p.NodeGroups()
	if len(gs) != 2 {
		t.Fatalf("groups %+v, problems %v", gs, p.Problems())
	}
	n := gs[0].Template
	if gpu.Allocatable(n) != 8 || n.Labels[gpu.LabelGKEAccelerator] != "nvidia-h100-80gb" || gs[0].PricePerHour != 100 {
		t.Errorf("template: gpus %d, label %q, price %g", gpu.Allocatable(n), n.Labels[gpu.LabelGKEAccelerator], gs[0].PricePerHour)
	}
	if c := e.f.callsOf("machineTypes"); len(c) != 1 || c[0].Path != "projects/gpu-project/zones/us-central1-a/machineTypes/a3-edgegpu-8g" {
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

func shapeOf(t *testing.T, p *propsBuilder) nodeShape {
	t.Helper()
	shape, err := shapeFromTemplate(context.Background(), &compute.InstanceTemplate{Name: "t", Properties: p.build()}, testZone, PriceOverrides{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return shape
}

// TestTPUAndGPUTemplates: TPU machine types scale from zero with their
// chips; GKE's partition and sharing labels (kube-env) say how GPUs are
// advertised; a node pool without GKE's device plugin publishes its GPUs
// through the NVIDIA DRA driver.
func TestTPUAndGPUTemplates(t *testing.T) {
	tpu := shapeOf(t, props("ct6e-standard-4t")).node("g", testZone, "pool")
	if q := tpu.Status.Allocatable[gpu.ResourceTPU]; q.Value() != 4 || tpu.Labels[gpu.LabelGKETPUAccelerator] != "tpu-v6e-slice" {
		t.Errorf("TPU template: chips %s, label %q", q.String(), tpu.Labels[gpu.LabelGKETPUAccelerator])
	}
	if !gpu.IsGPUNode(tpu) || gpu.Allocatable(tpu) != 4 {
		t.Error("a TPU template is not an accelerator node")
	}
	mig := shapeOf(t, props("a2-highgpu-2g").kubeEnv("AUTOSCALER_ENV_VARS: node_labels=cloud.google.com/gke-gpu-partition-size=1g.5gb\n")).node("g", testZone, "pool")
	if q := mig.Status.Allocatable[gpu.ResourceName]; q.Value() != 14 {
		t.Errorf("A100 pool in 1g.5gb partitions: %s nvidia.com/gpu, want 14", q.String())
	}
	shared := shapeOf(t, props("g2-standard-24").kubeEnv("AUTOSCALER_ENV_VARS: node_labels=cloud.google.com/gke-gpu-sharing-strategy=time-sharing,cloud.google.com/gke-max-shared-clients-per-gpu=3\n")).node("g", testZone, "pool")
	if q := shared.Status.Allocatable[gpu.ResourceName]; q.Value() != 6 {
		t.Errorf("two L4s shared by 3: %s nvidia.com/gpu, want 6", q.String())
	}
	draShape := shapeOf(t, props("a3-highgpu-8g").kubeEnv("AUTOSCALER_ENV_VARS: node_labels=gke-no-default-nvidia-gpu-device-plugin=true\n"))
	n := draShape.node("g", testZone, "pool")
	slices := draShape.slices(n)
	if _, ok := n.Status.Allocatable[gpu.ResourceName]; ok || len(slices) != 1 || len(slices[0].Spec.Devices) != 8 || *slices[0].Spec.NodeName != n.Name {
		t.Errorf("DRA pool: allocatable %v, slices %v", n.Status.Allocatable, slices)
	}
}
