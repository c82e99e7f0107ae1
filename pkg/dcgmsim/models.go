package dcgmsim

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// labelGPUMemory is GPU feature discovery's framebuffer size label, in MiB.
const labelGPUMemory = "nvidia.com/gpu.memory"

// Model describes a GPU product as dcgm-exporter would report it: the name
// NVML gives (the modelName label) and the figures the simulated gauges move
// between at no load and at full load.
type Model struct {
	// Name is NVML's product name, e.g. "Tesla T4".
	Name string
	// MemoryMiB is the framebuffer size.
	MemoryMiB float64
	// IdleWatts and MaxWatts bound DCGM_FI_DEV_POWER_USAGE.
	IdleWatts, MaxWatts float64
	// IdleSMClockMHz and MaxSMClockMHz bound DCGM_FI_DEV_SM_CLOCK.
	IdleSMClockMHz, MaxSMClockMHz float64
	// MemClockMHz is DCGM_FI_DEV_MEM_CLOCK (constant under load).
	MemClockMHz float64
}

// Known models; figures are the products' public specifications (memory,
// board power, boost clocks) and typical idle readings.
var (
	modelT4       = Model{Name: "Tesla T4", MemoryMiB: 15360, IdleWatts: 10, MaxWatts: 70, IdleSMClockMHz: 300, MaxSMClockMHz: 1590, MemClockMHz: 5000}
	modelV100     = Model{Name: "Tesla V100-SXM2-16GB", MemoryMiB: 16384, IdleWatts: 40, MaxWatts: 300, IdleSMClockMHz: 135, MaxSMClockMHz: 1530, MemClockMHz: 877}
	modelA10G     = Model{Name: "NVIDIA A10G", MemoryMiB: 23028, IdleWatts: 25, MaxWatts: 300, IdleSMClockMHz: 210, MaxSMClockMHz: 1710, MemClockMHz: 6251}
	modelL4       = Model{Name: "NVIDIA L4", MemoryMiB: 23034, IdleWatts: 16, MaxWatts: 72, IdleSMClockMHz: 210, MaxSMClockMHz: 2040, MemClockMHz: 6251}
	modelL40S     = Model{Name: "NVIDIA L40S", MemoryMiB: 46068, IdleWatts: 35, MaxWatts: 350, IdleSMClockMHz: 210, MaxSMClockMHz: 2520, MemClockMHz: 9001}
	modelA100_40G = Model{Name: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, IdleWatts: 50, MaxWatts: 400, IdleSMClockMHz: 210, MaxSMClockMHz: 1410, MemClockMHz: 1215}
	modelA100_80G = Model{Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, IdleWatts: 60, MaxWatts: 400, IdleSMClockMHz: 210, MaxSMClockMHz: 1410, MemClockMHz: 1593}
	modelH100     = Model{Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, IdleWatts: 70, MaxWatts: 700, IdleSMClockMHz: 345, MaxSMClockMHz: 1980, MemClockMHz: 2619}
)

// DefaultModel is reported for GPU nodes that carry no accelerator label: a
// Tesla T4.
func DefaultModel() Model { return modelT4 }

// modelsByLabel maps accelerator label values, lower-cased, to models: GPU
// feature discovery's nvidia.com/gpu.product, EKS's
// k8s.amazonaws.com/accelerator and GKE's cloud.google.com/gke-accelerator.
var modelsByLabel = map[string]Model{
	"tesla-t4": modelT4, "nvidia-tesla-t4": modelT4,
	"tesla-v100-sxm2-16gb": modelV100, "nvidia-tesla-v100": modelV100,
	"nvidia-a10g":           modelA10G,
	"nvidia-l4":             modelL4,
	"nvidia-l40s":           modelL40S,
	"nvidia-a100-sxm4-40gb": modelA100_40G, "nvidia-tesla-a100": modelA100_40G,
	"nvidia-a100-sxm4-80gb": modelA100_80G, "nvidia-a100-80gb": modelA100_80G,
	"nvidia-h100-80gb-hbm3": modelH100, "nvidia-h100-80gb": modelH100, "nvidia-h100": modelH100,
}

// modelLabels are read in this order: GPU feature discovery names the exact
// product, the cloud labels name a family.
var modelLabels = [...]string{gpu.LabelGPUProduct, gpu.LabelEKSAccelerator, gpu.LabelGKEAccelerator}

// ModelOf returns the GPU model of a node from its accelerator labels. An
// unknown product keeps its label as the name (GPU feature discovery's
// dashes turned back into spaces) with the default model's figures; a
// nvidia.com/gpu.memory label overrides the framebuffer size.
func ModelOf(node *corev1.Node) Model {
	m := DefaultModel()
	for _, key := range modelLabels {
		v := node.Labels[key]
		if v == "" {
			continue
		}
		if known, ok := modelsByLabel[strings.ToLower(v)]; ok {
			m = known
		} else {
			m.Name = strings.ReplaceAll(v, "-", " ")
		}
		break
	}
	if v, ok := node.Labels[labelGPUMemory]; ok {
		if mib, err := strconv.ParseFloat(v, 64); err == nil && mib > 0 {
			m.MemoryMiB = mib
		}
	}
	return m
}
