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
		{"gpu.present=false is not a gpu node", builder.Node("n").Label(gpu.LabelGPUPresent, "false").Build(), false, false, 0},
		{"MIG slices count", builder.Node("n").Allocatable("nvidia.com/mig-1g.10gb", "7").Build(), true, false, 7},
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
	pi, err := snapshot.NewPodInfo(builder.Pod("p").GPU(2).Request("nvidia.com/mig-3g.40gb", "1").Request("example.com/fpga", "1").Build())
	if err != nil {
		t.Fatal(err)
	}
	if got := gpu.Requested(&pi.Requests); got != 3 {
		t.Errorf("Requested = %d, want 3 (2 GPUs + 1 MIG slice, FPGA excluded)", got)
	}
}
