package gpu

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Model is an NVIDIA GPU product as drivers describe it: what the NVIDIA
// DRA driver publishes as device attributes, and the memory MIG profiles
// are cut from. Figures are NVIDIA's product specifications; ProductName
// and MemoryMiB are what NVML reports.
type Model struct {
	// ProductName is NVML's name, e.g. "NVIDIA A100-SXM4-40GB".
	ProductName string
	// Architecture is "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell".
	Architecture string
	// ComputeCapability is the CUDA compute capability, e.g. "8.0".
	ComputeCapability string
	// MemoryGB is the marketed memory (40 for an A100 40GB); MemoryMiB is
	// what NVML reports.
	MemoryGB  int
	MemoryMiB int64
	// MIG is true for GPUs that can be partitioned with MIG.
	MIG bool
}

var (
	modelT4      = Model{"Tesla T4", "Turing", "7.5", 16, 15360, false}
	modelV100    = Model{"Tesla V100-SXM2-16GB", "Volta", "7.0", 16, 16384, false}
	modelA10G    = Model{"NVIDIA A10G", "Ampere", "8.6", 24, 23028, false}
	modelL4      = Model{"NVIDIA L4", "Ada Lovelace", "8.9", 24, 23034, false}
	modelL40S    = Model{"NVIDIA L40S", "Ada Lovelace", "8.9", 48, 46068, false}
	modelA30     = Model{"NVIDIA A30", "Ampere", "8.0", 24, 24576, true}
	modelA100    = Model{"NVIDIA A100-SXM4-40GB", "Ampere", "8.0", 40, 40960, true}
	modelA100_80 = Model{"NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 80, 81920, true}
	modelH100    = Model{"NVIDIA H100 80GB HBM3", "Hopper", "9.0", 80, 81559, true}
	modelH200    = Model{"NVIDIA H200", "Hopper", "9.0", 141, 143771, true}
	modelB200    = Model{"NVIDIA B200", "Blackwell", "10.0", 180, 183359, true}
)

// LookupModel finds a GPU model by an accelerator label value: GKE's
// (nvidia-tesla-a100), the EKS convention (nvidia-a10g), or GPU feature
// discovery's product (NVIDIA-A100-SXM4-40GB), or NVML's product name
// (NVIDIA A100-SXM4-40GB). Case does not matter.
func LookupModel(label string) (Model, bool) {
	switch strings.ReplaceAll(strings.ToLower(label), " ", "-") {
	case "nvidia-tesla-t4", "tesla-t4", "nvidia-t4":
		return modelT4, true
	case "nvidia-tesla-v100", "tesla-v100-sxm2-16gb":
		return modelV100, true
	case "nvidia-a10g":
		return modelA10G, true
	case "nvidia-l4":
		return modelL4, true
	case "nvidia-l40s":
		return modelL40S, true
	case "nvidia-a30":
		return modelA30, true
	case "nvidia-tesla-a100", "nvidia-a100", "nvidia-a100-sxm4-40gb":
		return modelA100, true
	case "nvidia-a100-80gb", "nvidia-a100-sxm4-80gb":
		return modelA100_80, true
	case "nvidia-h100-80gb", "nvidia-h100", "nvidia-h100-mega-80gb", "nvidia-h100-80gb-hbm3":
		return modelH100, true
	case "nvidia-h200-141gb", "nvidia-h200":
		return modelH200, true
	case "nvidia-b200":
		return modelB200, true
	}
	return Model{}, false
}

// modelLabels are read in this order: GPU feature discovery names the
// exact product, the cloud labels name a family.
var modelLabels = [...]string{LabelGPUProduct, LabelEKSAccelerator, LabelGKEAccelerator, LabelKarpenterGPUName}

// ModelOfNode finds a node's GPU model from its accelerator labels.
func ModelOfNode(node *v1.Node) (Model, bool) {
	for _, key := range modelLabels {
		if v := node.Labels[key]; v != "" {
			if m, ok := LookupModel(v); ok {
				return m, true
			}
		}
	}
	return Model{}, false
}
