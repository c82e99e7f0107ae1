// Package gpu is the one place that knows how accelerators show up on
// Kubernetes nodes and pods: the extended resources device plugins advertise
// (NVIDIA GPUs and MIG profiles, AMD GPUs, AWS Neuron devices and cores,
// Google TPUs, Intel Gaudi and GPUs), the labels clouds and GPU operators put
// on accelerator nodes before any device plugin runs, the DRA drivers that
// publish accelerators as ResourceSlices, and how partitions (MIG, time
// slicing) relate to whole devices.
//
// "GPU" in this package and in the rest of gpuscale means any of these
// accelerators: every GPU-aware rule (upcoming nodes, CPU pods kept off
// accelerator groups, the scale-down GPU threshold, --gpu-total) applies to
// all of them.
package gpu

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ResourceName is the whole-GPU resource of NVIDIA's device plugin.
const ResourceName v1.ResourceName = "nvidia.com/gpu"

// Accelerator resources advertised by device plugins.
const (
	// ResourceNVIDIAShared is nvidia.com/gpu renamed by the NVIDIA device
	// plugin's time-slicing or MPS sharing (renameByDefault: true).
	ResourceNVIDIAShared v1.ResourceName = "nvidia.com/gpu.shared"
	ResourceAMD          v1.ResourceName = "amd.com/gpu"
	// ResourceNeuron and ResourceNeuronDevice are whole Inferentia or
	// Trainium devices (the Neuron device plugin advertises both names);
	// ResourceNeuronCore is one NeuronCore of a device.
	ResourceNeuron       v1.ResourceName = "aws.amazon.com/neuron"
	ResourceNeuronDevice v1.ResourceName = "aws.amazon.com/neurondevice"
	ResourceNeuronCore   v1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceTPU          v1.ResourceName = "google.com/tpu"
	ResourceGaudi        v1.ResourceName = "habana.ai/gaudi"
	ResourceIntelI915    v1.ResourceName = "gpu.intel.com/i915"
	ResourceIntelXe      v1.ResourceName = "gpu.intel.com/xe"
)

// MIGPrefix starts every MIG profile resource of the NVIDIA device plugin's
// mixed strategy, e.g. nvidia.com/mig-1g.10gb.
const MIGPrefix = "nvidia.com/mig-"

// Kind says what one unit of an accelerator resource is.
type Kind uint8

// Kinds of accelerator resources.
const (
	// NotAccelerator: the resource is not an accelerator.
	NotAccelerator Kind = iota
	// Device: one whole accelerator (a GPU, a Neuron device, a TPU chip).
	Device
	// MIGSlice: one MIG instance of an NVIDIA GPU.
	MIGSlice
	// Core: one NeuronCore, a share of a Neuron device.
	Core
	// SharedReplica: one time-sliced or MPS replica of a GPU under a
	// renamed resource (nvidia.com/gpu.shared).
	SharedReplica
)

// KindOf classifies an extended resource name. Plain loops call it for
// every scalar of a pod, so it is a switch, not a map.
func KindOf(name v1.ResourceName) Kind {
	switch name {
	case ResourceName, ResourceAMD, ResourceNeuron, ResourceNeuronDevice, ResourceTPU, ResourceGaudi,
		ResourceIntelI915, ResourceIntelXe:
		return Device
	case ResourceNeuronCore:
		return Core
	case ResourceNVIDIAShared:
		return SharedReplica
	}
	if strings.HasPrefix(string(name), MIGPrefix) {
		return MIGSlice
	}
	return NotAccelerator
}

// IsGPUResource reports whether name is an accelerator resource: a whole
// device, a MIG slice, a NeuronCore or a shared replica.
func IsGPUResource(name v1.ResourceName) bool { return KindOf(name) != NotAccelerator }

// IsGPUNode reports whether the node has accelerators: allocatable or
// capacity accelerator resources, or an accelerator label (a node whose
// device plugin has not yet advertised anything still is a GPU node).
func IsGPUNode(node *v1.Node) bool {
	return Allocatable(node) > 0 || Capacity(node) > 0 || HasAcceleratorLabel(node)
}

// Allocatable is the node's allocatable accelerator resources summed:
// devices, MIG slices, NeuronCores and replicas alike. It answers "has the
// device plugin advertised anything?"; Units answers "how much?".
func Allocatable(node *v1.Node) int64 { return count(node.Status.Allocatable) }

// Capacity is Allocatable for the node's capacity.
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

// Requested sums the accelerator resources in r, every kind counted as one.
func Requested(r *snapshot.Resource) int64 {
	var n int64
	for name, v := range r.Scalar {
		if IsGPUResource(name) {
			n += v
		}
	}
	return n
}

// DRA drivers that publish accelerators as ResourceSlices.
const (
	DriverNVIDIA = "gpu.nvidia.com"
	DriverAMD    = "gpu.amd.com"
	DriverIntel  = "gpu.intel.com"
	DriverGaudi  = "gaudi.intel.com"
)

// IsAcceleratorDriver reports whether a DRA driver publishes accelerators.
// Other drivers (NICs, NVIDIA's compute-domain.nvidia.com) publish devices
// that do not make a node an accelerator node.
func IsAcceleratorDriver(driver string) bool {
	switch driver {
	case DriverNVIDIA, DriverAMD, DriverIntel, DriverGaudi:
		return true
	}
	return false
}
