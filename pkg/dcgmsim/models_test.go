package dcgmsim

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func TestModelOf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		wantName  string
		wantMiB   float64
		wantWatts float64
	}{
		{"no label: default model", nil, DefaultModel().Name, DefaultModel().MemoryMiB, DefaultModel().MaxWatts},
		{"feature discovery product", map[string]string{gpu.LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}, "NVIDIA A100-SXM4-80GB", 81920, 400},
		{"EKS accelerator", map[string]string{gpu.LabelEKSAccelerator: "nvidia-a10g"}, "NVIDIA A10G", 23028, 300},
		{"GKE accelerator", map[string]string{gpu.LabelGKEAccelerator: "nvidia-l4"}, "NVIDIA L4", 23034, 72},
		{"label case ignored", map[string]string{gpu.LabelGPUProduct: "TESLA-T4"}, "Tesla T4", 15360, 70},
		{"product wins over cloud label", map[string]string{gpu.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", gpu.LabelGKEAccelerator: "nvidia-tesla-t4"}, "NVIDIA H100 80GB HBM3", 81559, 700},
		{"unknown product keeps its name", map[string]string{gpu.LabelGPUProduct: "NVIDIA-B200"}, "NVIDIA B200", DefaultModel().MemoryMiB, DefaultModel().MaxWatts},
		{"memory label overrides", map[string]string{gpu.LabelGKEAccelerator: "nvidia-l4", labelGPUMemory: "20000"}, "NVIDIA L4", 20000, 72},
		{"bad memory label ignored", map[string]string{gpu.LabelGKEAccelerator: "nvidia-l4", labelGPUMemory: "lots"}, "NVIDIA L4", 23034, 72},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := builder.Node("n").GPU(1)
			for k, v := range tc.labels {
				b.Label(k, v)
			}
			m := ModelOf(b.Build())
			if m.Name != tc.wantName || m.MemoryMiB != tc.wantMiB || m.MaxWatts != tc.wantWatts {
				t.Errorf("ModelOf = %q %v MiB %v W, want %q %v MiB %v W", m.Name, m.MemoryMiB, m.MaxWatts, tc.wantName, tc.wantMiB, tc.wantWatts)
			}
		})
	}
}
