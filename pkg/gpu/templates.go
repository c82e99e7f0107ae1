package gpu

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Labels that say how a node's NVIDIA GPUs are exposed.
const (
	// LabelMIGStrategy is the NVIDIA device plugin's MIG strategy, as GPU
	// feature discovery labels it: "single" (each partition is one
	// nvidia.com/gpu) or "mixed" (nvidia.com/mig-<profile>, the default).
	LabelMIGStrategy = "nvidia.com/mig.strategy"
	// LabelDeployDevicePlugin "false" keeps the GPU operator from running
	// the device plugin on the node: its GPUs come from the NVIDIA DRA
	// driver instead.
	LabelDeployDevicePlugin = "nvidia.com/gpu.deploy.device-plugin"
	// LabelGKENoDevicePlugin "true" keeps GKE's device plugin off the
	// node, the documented way to run the NVIDIA DRA driver on GKE.
	LabelGKENoDevicePlugin = "gke-no-default-nvidia-gpu-device-plugin"
)

// UsesDRADriver reports whether a node's NVIDIA GPUs are published by the
// NVIDIA DRA driver (ResourceSlices of gpu.nvidia.com) rather than
// advertised by the device plugin, from the labels that switch the device
// plugin off.
func UsesDRADriver(labels map[string]string) bool {
	return labels[LabelDeployDevicePlugin] == "false" || labels[LabelGKENoDevicePlugin] == "true"
}

// AdvertisedResources is what NVIDIA's device plugin advertises on a node
// with physical GPUs of memoryGB each (0 when unknown), given the node's
// labels:
//
//   - a MIG layout, from the GPU operator's nvidia.com/mig.config
//     (all-<profile>, as the MIG manager names its uniform layouts) or
//     GKE's cloud.google.com/gke-gpu-partition-size: each GPU split into
//     as many partitions of the profile as fit; advertised as
//     nvidia.com/mig-<profile> (mixed strategy, the operator's default) or
//     as nvidia.com/gpu (single strategy, and always on GKE);
//   - sharing, from GPU feature discovery's nvidia.com/gpu.replicas or
//     GKE's cloud.google.com/gke-max-shared-clients-per-gpu: each GPU (or
//     partition) advertised that many times.
//
// Templates use it so that a group of partitioned or shared GPUs scales
// from zero with the resources its nodes will have. An unreadable label
// is an error that names it.
func AdvertisedResources(physical int64, labels map[string]string, memoryGB int) (v1.ResourceList, error) {
	if physical <= 0 {
		return nil, nil
	}
	name, n := ResourceName, physical
	profile, gke := labels[LabelGKEGPUPartitionSize], true
	if profile == "" {
		profile, gke = strings.TrimPrefix(labels[LabelMIGConfig], "all-"), false
		if profile == "disabled" || !strings.HasPrefix(labels[LabelMIGConfig], "all-") {
			profile = ""
		}
	}
	if profile != "" {
		p, err := ParseMIGProfile(profile)
		if err != nil {
			key := LabelGKEGPUPartitionSize
			if !gke {
				key = LabelMIGConfig
			}
			return nil, fmt.Errorf("label %s: %w", key, err)
		}
		n *= int64(p.PerGPU(memoryGB))
		if !gke && labels[LabelMIGStrategy] != "single" {
			name = p.Resource()
		}
	}
	for _, key := range []string{LabelGPUReplicas, LabelGKEMaxSharedClients} {
		v, ok := labels[key]
		if !ok {
			continue
		}
		r, err := strconv.ParseInt(v, 10, 64)
		if err != nil || r < 1 {
			return nil, fmt.Errorf("label %s: want a positive whole number, got %q", key, v)
		}
		n *= r
		break
	}
	return v1.ResourceList{name: *resource.NewQuantity(n, resource.DecimalSI)}, nil
}
