package scaledown

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// utilizationOptions are the options NodeUtilization reads.
type utilizationOptions struct {
	ignoreDaemonSets, ignoreMirror bool
	cutoff                         int32
}

// NodeUtilization computes a node's utilization at now, as the Cluster
// Autoscaler does: GPU nodes (gpu.IsGPUNode) by their GPU requests alone,
// other nodes by the larger of cpu and memory. Expendable pods and pods
// terminating past their grace period do not count; DaemonSet and mirror
// pods count unless the Ignore*Utilization options are set, in which case
// they leave both the requests and the allocatable. A GPU node whose GPUs are
// not advertised yet has no GPU allocatable and reads as 0.
//
// Accelerators published through Dynamic Resource Allocation count too: a
// node with devices of an accelerator driver in its slices (s) is judged
// by the share of them its claims hold (dra.NodeUsage), or, when it also
// advertises accelerator resources, by the larger of the two shares.
func NodeUtilization(s *snapshot.Snapshot, ni *snapshot.NodeInfo, o *Options, now time.Time) disruption.Utilization {
	return snapshotUtilization(s, ni, utilizationOptions{
		ignoreDaemonSets: o.IgnoreDaemonSetsUtilization,
		ignoreMirror:     o.IgnoreMirrorPodsUtilization,
		cutoff:           o.ExpendablePodsPriorityCutoff,
	}, now, nil)
}

// snapshotUtilization is NodeUtilization with the options already chosen
// (a group's own DaemonSet accounting), the requests' part taken from
// cache where it holds the node's (nil: none).
func snapshotUtilization(s *snapshot.Snapshot, ni *snapshot.NodeInfo, o utilizationOptions, now time.Time, cache *utilizationCache) disruption.Utilization {
	u := cache.of(ni, o, now)
	if !s.HasDRA() {
		return u
	}
	du := dra.NodeUsage(s, ni.Name())
	if du.Offered <= 0 {
		return u
	}
	v := du.Ratio()
	if u.GPUNode && (gpu.Allocatable(ni.Node) > 0 && u.GPU >= v) {
		return u
	}
	return disruption.Utilization{Resource: v1.ResourceName(du.Driver), Value: v, GPU: v, GPUNode: true}
}

// utilizationCache keeps each node's utilization by its requests from
// pass to pass while the node and its pods are unchanged
// (snapshot.NodeInfo.Stamp) and none of its pods is terminating, whose
// count depends on the time. Most nodes of a large cluster do not change
// between two loops, and this is scale-down's one walk over every pod of
// every node. Nodes not looked up in a pass are forgotten at its end.
type utilizationCache struct {
	nodes snapshot.NodeMemo[utilizationKey, disruption.Utilization]
}

type utilizationKey struct {
	stamp uint64
	o     utilizationOptions
}

// of returns ni's utilization by its requests (nodeUtilization); a nil
// cache computes it.
func (c *utilizationCache) of(ni *snapshot.NodeInfo, o utilizationOptions, now time.Time) disruption.Utilization {
	if c == nil {
		u, _ := nodeUtilization(ni, o, now)
		return u
	}
	key := utilizationKey{ni.Stamp(), o}
	if u, ok := c.nodes.Get(ni, key); ok {
		return u
	}
	u, timed := nodeUtilization(ni, o, now)
	if timed {
		c.nodes.Forget(ni)
	} else {
		c.nodes.Put(ni, key, u)
	}
	return u
}

// nodeUtilization is a node's utilization by its pods' requests, and
// whether it depends on now (a pod of the node is terminating).
func nodeUtilization(ni *snapshot.NodeInfo, o utilizationOptions, now time.Time) (_ disruption.Utilization, timed bool) {
	var used, excluded struct {
		cpu, mem int64
		gpu      float64
	}
	accel := gpu.IsGPUNode(ni.Node)
	var scale gpu.Scale
	if accel {
		scale = gpu.ScaleOf(ni.Node)
	}
	for _, pi := range ni.Pods {
		pod := pi.Pod
		if drain.IsExpendable(pod, o.cutoff) {
			continue
		}
		target := &used
		if (o.ignoreDaemonSets && drain.IsDaemonSetPod(pod)) || (o.ignoreMirror && drain.IsMirrorPod(pod)) {
			target = &excluded
		} else if pod.DeletionTimestamp != nil {
			timed = true
			if drain.IsLongTerminating(pod, now) {
				continue
			}
		}
		target.cpu += pi.Requests.MilliCPU
		target.mem += pi.Requests.Memory
		if accel && len(pi.Requests.Scalar) > 0 {
			target.gpu += scale.Units(pi.Requests.Scalar)
		}
	}
	alloc := &ni.Allocatable
	if accel {
		g := ratioOf(used.gpu, scale.Offered(alloc.Scalar)-excluded.gpu)
		return disruption.Utilization{Resource: acceleratorResource(ni.Node), Value: g, GPU: g, GPUNode: true}, timed
	}
	u := disruption.Utilization{
		CPU:    ratio(used.cpu, alloc.MilliCPU-excluded.cpu),
		Memory: ratio(used.mem, alloc.Memory-excluded.mem),
	}
	// Ties go to memory, as upstream reports them.
	if u.CPU > u.Memory {
		u.Resource, u.Value = v1.ResourceCPU, u.CPU
	} else {
		u.Resource, u.Value = v1.ResourceMemory, u.Memory
	}
	return u, timed
}

// acceleratorResource names what an accelerator node is judged by in
// messages: its first accelerator resource (amd.com/gpu,
// nvidia.com/mig-1g.10gb), nvidia.com/gpu when it advertises none yet.
func acceleratorResource(node *v1.Node) v1.ResourceName {
	if r := gpu.ResourceOf(node); r != "" {
		return r
	}
	return gpu.ResourceName
}

// ratio is used over allocatable; nothing allocatable reads as unused, so a
// node with no GPUs advertised is not kept for its GPU requests.
func ratio(used, allocatable int64) float64 {
	if allocatable <= 0 {
		return 0
	}
	return float64(used) / float64(allocatable)
}

func ratioOf(used, allocatable float64) float64 {
	if allocatable <= 1e-9 {
		return 0
	}
	return used / allocatable
}
