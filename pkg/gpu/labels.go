package gpu

import (
	v1 "k8s.io/api/core/v1"
)

// Labels that mark an accelerator node from the moment it registers, before
// its device plugin or DRA driver advertises anything.
const (
	// LabelGKEAccelerator is GKE's GPU type label (nvidia-l4, nvidia-tesla-a100).
	LabelGKEAccelerator = "cloud.google.com/gke-accelerator"
	// LabelGKETPUAccelerator is GKE's TPU type label (tpu-v5-lite-podslice, tpu-v6e-slice).
	LabelGKETPUAccelerator = "cloud.google.com/gke-tpu-accelerator"
	// LabelEKSAccelerator is the label EKS guides set with --node-labels
	// (nvidia-a10g; gpuscale's AWS templates also use it for Neuron, AMD and
	// Gaudi types).
	LabelEKSAccelerator = "k8s.amazonaws.com/accelerator"
	// LabelGPUPresent is set by the NVIDIA GPU operator's feature discovery.
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelGPUProduct is NVIDIA GPU feature discovery's product name
	// (NVIDIA-A100-SXM4-40GB).
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelAMDProductName is the AMD GPU node labeller's product name.
	LabelAMDProductName = "amd.com/gpu.product-name"
	// LabelAMDPresent is node feature discovery's AMD GPU label.
	LabelAMDPresent = "feature.node.kubernetes.io/amd-gpu"
	// LabelKarpenterGPUName and LabelKarpenterAcceleratorName are set on the
	// nodes Karpenter launches (a100, inferentia2).
	LabelKarpenterGPUName         = "karpenter.k8s.aws/instance-gpu-name"
	LabelKarpenterAcceleratorName = "karpenter.k8s.aws/instance-accelerator-name"
)

// Labels that describe how a node's GPUs are shared.
const (
	// LabelGKETPUTopology is the TPU slice topology of a GKE TPU node pool (2x4).
	LabelGKETPUTopology = "cloud.google.com/gke-tpu-topology"
	// LabelGKEGPUPartitionSize is the MIG profile of a GKE GPU node pool
	// (1g.5gb); each partition is advertised as one nvidia.com/gpu.
	LabelGKEGPUPartitionSize = "cloud.google.com/gke-gpu-partition-size"
	// LabelGKEGPUSharingStrategy is "time-sharing" or "mps".
	LabelGKEGPUSharingStrategy = "cloud.google.com/gke-gpu-sharing-strategy"
	// LabelGKEMaxSharedClients is how many containers share one GPU (or one
	// partition); the node advertises that many nvidia.com/gpu per GPU.
	LabelGKEMaxSharedClients = "cloud.google.com/gke-max-shared-clients-per-gpu"
	// LabelGPUCount is GPU feature discovery's physical GPU count.
	LabelGPUCount = "nvidia.com/gpu.count"
	// LabelGPUReplicas is GPU feature discovery's replicas per GPU under
	// time-slicing or MPS.
	LabelGPUReplicas = "nvidia.com/gpu.replicas"
	// LabelGPUSharingStrategy is GPU feature discovery's sharing strategy
	// (none, time-slicing, mps).
	LabelGPUSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	// LabelMIGConfig is the MIG layout the NVIDIA MIG manager applies
	// (all-1g.10gb); LabelMIGConfigState is its progress (pending,
	// rebooting, success, failed).
	LabelMIGConfig      = "nvidia.com/mig.config"
	LabelMIGConfigState = "nvidia.com/mig.config.state"
)

// markerLabels mark accelerator nodes; "false" means no.
var markerLabels = [...]string{
	LabelGKEAccelerator, LabelGKETPUAccelerator, LabelEKSAccelerator, LabelGPUPresent, LabelGPUProduct,
	LabelAMDProductName, LabelAMDPresent, LabelKarpenterGPUName, LabelKarpenterAcceleratorName,
}

// typeLabels name the accelerator type, most specific first.
var typeLabels = [...]string{
	LabelGKEAccelerator, LabelGKETPUAccelerator, LabelEKSAccelerator, LabelGPUProduct,
	LabelAMDProductName, LabelKarpenterGPUName, LabelKarpenterAcceleratorName,
}

// HasAcceleratorLabel reports whether the node carries one of the labels
// that mark accelerator nodes.
func HasAcceleratorLabel(node *v1.Node) bool {
	for _, l := range markerLabels {
		if v, ok := node.Labels[l]; ok && v != "false" {
			return true
		}
	}
	return false
}

// Type names the accelerator type of a node, for --gpu-total and metric
// labels: the value of the first type label set (nvidia-tesla-a100,
// tpu-v6e-slice, nvidia-a10g), otherwise the node's first accelerator
// resource by name (amd.com/gpu), otherwise "nvidia.com/gpu".
func Type(node *v1.Node) string {
	for _, l := range typeLabels {
		if v := node.Labels[l]; v != "" && v != "false" {
			return v
		}
	}
	if r := ResourceOf(node); r != "" {
		return string(r)
	}
	return string(ResourceName)
}

// ResourceOf is the node's first accelerator resource by name (capacity or
// allocatable), or "" when it has none.
func ResourceOf(node *v1.Node) v1.ResourceName {
	// The least name, found without sorting: every node of every loop
	// asks.
	var least v1.ResourceName
	for _, rl := range [...]v1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		for name, q := range rl {
			if (least == "" || name < least) && IsGPUResource(name) && !q.IsZero() {
				least = name
			}
		}
	}
	return least
}
