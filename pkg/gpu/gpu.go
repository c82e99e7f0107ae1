// Package gpu knows how GPUs show up on Kubernetes nodes and pods: the
// nvidia.com/gpu resource and MIG profiles the device plugin advertises, and
// the labels cloud providers and GPU operators put on accelerator nodes
// before the device plugin has started.
package gpu

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ResourceName is the whole-GPU resource of NVIDIA's device plugin.
const ResourceName v1.ResourceName = "nvidia.com/gpu"

// migPrefix starts every MIG profile resource, e.g. nvidia.com/mig-1g.10gb.
const migPrefix = "nvidia.com/mig-"

// Labels that mark an accelerator node from the moment it registers, before
// its device plugin advertises any GPU.
const (
	LabelGKEAccelerator = "cloud.google.com/gke-accelerator"
	LabelEKSAccelerator = "k8s.amazonaws.com/accelerator"
	LabelGPUPresent     = "nvidia.com/gpu.present"
	LabelGPUProduct     = "nvidia.com/gpu.product"
)

var acceleratorLabels = [...]string{LabelGKEAccelerator, LabelEKSAccelerator, LabelGPUPresent, LabelGPUProduct}

// IsGPUResource reports whether name is a GPU: whole GPUs or a MIG profile.
func IsGPUResource(name v1.ResourceName) bool {
	return name == ResourceName || strings.HasPrefix(string(name), migPrefix)
}

// HasAcceleratorLabel reports whether the node carries one of the labels
// that mark GPU nodes.
func HasAcceleratorLabel(node *v1.Node) bool {
	for _, l := range acceleratorLabels {
		if v, ok := node.Labels[l]; ok && v != "false" {
			return true
		}
	}
	return false
}

// IsGPUNode reports whether the node has GPUs: allocatable or capacity GPU
// resources, or an accelerator label (a node whose device plugin has not yet
// advertised its GPUs still is a GPU node).
func IsGPUNode(node *v1.Node) bool {
	return Allocatable(node) > 0 || Capacity(node) > 0 || HasAcceleratorLabel(node)
}

// Allocatable is the node's allocatable GPU count, MIG slices included.
func Allocatable(node *v1.Node) int64 { return count(node.Status.Allocatable) }

// Capacity is the node's GPU capacity, MIG slices included.
func Capacity(node *v1.Node) int64 { return count(node.Status.Capacity) }

func count(rl v1.ResourceList) int64 {
	var n int64
	for name, q := range rl {
		if IsGPUResource(name) {
			n += q.Value()
		}
	}
	return n
}

// Requested sums the GPU resources (MIG slices included) in r.
func Requested(r *snapshot.Resource) int64 {
	var n int64
	for name, v := range r.Scalar {
		if IsGPUResource(name) {
			n += v
		}
	}
	return n
}

// Awaiting reports whether a GPU node has registered but its device plugin
// has not advertised its GPUs yet: it carries an accelerator label (or GPU
// capacity) but no allocatable GPU.
func Awaiting(node *v1.Node) bool {
	return Allocatable(node) == 0 && (HasAcceleratorLabel(node) || Capacity(node) > 0)
}
