package predicates

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// tolerates wraps component-helpers' toleration matching. The comparison
// operators of the TaintTolerationComparisonOperators gate stay off, as they
// are by default in kube-scheduler.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(discard, tolerations, taint, false)
}

// untoleratedTaint returns the index of the first NoSchedule or NoExecute
// taint of node that tolerations do not tolerate, or -1.
func untoleratedTaint(node *v1.Node, tolerations []v1.Toleration) int {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(tolerations, t) {
			return i
		}
	}
	return -1
}

func (pc *PodCheck) checkNodeLocal(ni *snapshot.NodeInfo) Result {
	node := ni.Node
	if node.Spec.Unschedulable && !pc.toleratesUnschedulable {
		return Result{Predicate: NodeUnschedulable, Reason: ReasonUnschedulable}
	}
	if pc.pod.Spec.NodeName != "" && pc.pod.Spec.NodeName != node.Name {
		return Result{Predicate: NodeName, Reason: ReasonNodeName, Detail: pc.pod.Spec.NodeName}
	}
	if i := untoleratedTaint(node, pc.pod.Spec.Tolerations); i >= 0 {
		return Result{Predicate: TaintToleration, Reason: ReasonTaint, Taint: &node.Spec.Taints[i]}
	}
	if pc.hasNodeAffinity {
		// Like kube-scheduler, a term that fails to parse matches nothing.
		if ok, _ := pc.nodeAffinity.Match(node); !ok {
			return Result{Predicate: NodeAffinity, Reason: ReasonNodeAffinity}
		}
	}
	for _, p := range pc.pi.HostPorts {
		if ni.PortConflict(p) {
			return Result{Predicate: NodePorts, Reason: ReasonHostPort, Detail: p.Protocol, Wanted: int64(p.Port)}
		}
	}
	return pc.checkResources(ni)
}

func (pc *PodCheck) checkResources(ni *snapshot.NodeInfo) Result {
	alloc, used, req := &ni.Allocatable, &ni.Requested, &pc.pi.Requests
	if n := int64(len(ni.Pods)); n+1 > alloc.AllowedPods {
		return Result{Predicate: NodeResourcesFit, Reason: ReasonTooManyPods, Resource: v1.ResourcePods,
			Wanted: 1, Used: n, Allocatable: alloc.AllowedPods}
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		return insufficient(v1.ResourceCPU, req.MilliCPU, used.MilliCPU, alloc.MilliCPU)
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		return insufficient(v1.ResourceMemory, req.Memory, used.Memory, alloc.Memory)
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		return insufficient(v1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage)
	}
	for _, s := range pc.scalars {
		a, u := alloc.Scalar[s.name], used.Scalar[s.name]
		if s.qty > a-u {
			return insufficient(s.name, s.qty, u, a)
		}
	}
	return Result{}
}

func insufficient(name v1.ResourceName, wanted, used, alloc int64) Result {
	return Result{Predicate: NodeResourcesFit, Reason: ReasonInsufficient, Resource: name,
		Wanted: wanted, Used: used, Allocatable: alloc}
}
