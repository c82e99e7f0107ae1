package gpu_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func TestNodeKinds(t *testing.T) {
	cases := []struct {
		name            string
		node            *v1.Node
		isGPU, awaiting bool
		allocatableGPUs int64
	}{
		{"cpu node", builder.Node("n").Build(), false, false, 0},
		{"gpu node with plugin running", builder.Node("n").GPU(4).Build(), true, false, 4},
		{"labelled gpu node before the device plugin", builder.Node("n").Label(gpu.LabelEKSAccelerator, "nvidia-a10g").Build(), true, true, 0},
		{"gke accelerator label", builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build(), true, true, 0},
		{"gke tpu label before the device plugin", builder.Node("n").Label(gpu.LabelGKETPUAccelerator, "tpu-v6e-slice").Build(), true, true, 0},
		{"amd node labeller", builder.Node("n").Label(gpu.LabelAMDProductName, "Instinct-MI300X").Build(), true, true, 0},
		{"gpu.present=false is not a gpu node", builder.Node("n").Label(gpu.LabelGPUPresent, "false").Build(), false, false, 0},
		{"MIG slices count", builder.Node("n").Allocatable("nvidia.com/mig-1g.10gb", "7").Build(), true, false, 7},
		{"amd gpus", builder.Node("n").Allocatable("amd.com/gpu", "8").Build(), true, false, 8},
		{"neuron devices and cores", builder.Node("n").Allocatable("aws.amazon.com/neuron", "1").Allocatable("aws.amazon.com/neuroncore", "2").Build(), true, false, 3},
		{"tpu chips", builder.Node("n").Allocatable("google.com/tpu", "4").Build(), true, false, 4},
		{"gaudi", builder.Node("n").Allocatable("habana.ai/gaudi", "8").Build(), true, false, 8},
		{"fpga is not an accelerator here", builder.Node("n").Allocatable("example.com/fpga", "1").Build(), false, false, 0},
		{"MIG layout still being applied", builder.Node("n").GPU(1).Label(gpu.LabelMIGConfig, "all-1g.10gb").Label(gpu.LabelMIGConfigState, "pending").Build(), true, true, 1},
		{"MIG layout applied", builder.Node("n").Allocatable("nvidia.com/mig-1g.10gb", "7").Label(gpu.LabelMIGConfig, "all-1g.10gb").Label(gpu.LabelMIGConfigState, "success").Build(), true, false, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gpu.IsGPUNode(tc.node); got != tc.isGPU {
				t.Errorf("IsGPUNode = %v, want %v", got, tc.isGPU)
			}
			if got := gpu.Awaiting(tc.node); got != tc.awaiting {
				t.Errorf("Awaiting = %v, want %v", got, tc.awaiting)
			}
			if got := gpu.Allocatable(tc.node); got != tc.allocatableGPUs {
				t.Errorf("Allocatable = %d, want %d", got, tc.allocatableGPUs)
			}
		})
	}
}

func TestRequested(t *testing.T) {
	pi, err := snapshot.NewPodInfo(builder.Pod("p").GPU(2).Request("nvidia.com/mig-3g.40gb", "1").
		Request("aws.amazon.com/neuroncore", "2").Request("example.com/fpga", "1").Build())
	if err != nil {
		t.Fatal(err)
	}
	if got := gpu.Requested(&pi.Requests); got != 5 {
		t.Errorf("Requested = %d, want 5 (2 GPUs + 1 MIG slice + 2 NeuronCores, FPGA excluded)", got)
	}
}

func TestKindOf(t *testing.T) {
	cases := map[v1.ResourceName]gpu.Kind{
		"nvidia.com/gpu": gpu.Device, "amd.com/gpu": gpu.Device, "aws.amazon.com/neuron": gpu.Device,
		"aws.amazon.com/neurondevice": gpu.Device, "google.com/tpu": gpu.Device, "habana.ai/gaudi": gpu.Device,
		"gpu.intel.com/i915": gpu.Device, "nvidia.com/mig-1g.5gb+me": gpu.MIGSlice,
		"aws.amazon.com/neuroncore": gpu.Core, "nvidia.com/gpu.shared": gpu.SharedReplica,
		"cpu": gpu.NotAccelerator, "example.com/fpga": gpu.NotAccelerator, "nvidia.com/gpu.product": gpu.NotAccelerator,
	}
	for name, want := range cases {
		if got := gpu.KindOf(name); got != want {
			t.Errorf("KindOf(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestAcceleratorDrivers(t *testing.T) {
	for _, d := range []string{"gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com", "gaudi.intel.com"} {
		if !gpu.IsAcceleratorDriver(d) {
			t.Errorf("%s is an accelerator driver", d)
		}
	}
	for _, d := range []string{"compute-domain.nvidia.com", "dra.net", ""} {
		if gpu.IsAcceleratorDriver(d) {
			t.Errorf("%s is not an accelerator driver", d)
		}
	}
}

func TestType(t *testing.T) {
	cases := []struct {
		node *v1.Node
		want string
	}{
		{builder.Node("n").GPU(1).Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build(), "nvidia-l4"},
		{builder.Node("n").Allocatable("google.com/tpu", "4").Label(gpu.LabelGKETPUAccelerator, "tpu-v5-lite-podslice").Build(), "tpu-v5-lite-podslice"},
		{builder.Node("n").Allocatable("amd.com/gpu", "1").Build(), "amd.com/gpu"},
		{builder.Node("n").Build(), "nvidia.com/gpu"},
	}
	for _, tc := range cases {
		if got := gpu.Type(tc.node); got != tc.want {
			t.Errorf("Type = %q, want %q", got, tc.want)
		}
	}
}

func TestLookupModel(t *testing.T) {
	for label, want := range map[string]string{
		"nvidia-tesla-a100": "NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
		"nvidia-h100-80gb": "NVIDIA H100 80GB HBM3", "nvidia-l4": "NVIDIA L4", "nvidia-tesla-t4": "Tesla T4",
	} {
		m, ok := gpu.LookupModel(label)
		if !ok || m.ProductName != want {
			t.Errorf("LookupModel(%q) = %q, %v; want %q", label, m.ProductName, ok, want)
		}
	}
	if _, ok := gpu.LookupModel("nvidia-unknown"); ok {
		t.Error("an unknown label found a model")
	}
}
