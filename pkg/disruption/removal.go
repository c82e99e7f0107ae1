package disruption

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Node annotations and taints the Cluster Autoscaler defines; gpuscale
// honours and sets the same ones.
const (
	// AnnotationScaleDownDisabled set to "true" keeps a node.
	AnnotationScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// TaintToBeDeleted (NoSchedule) marks a node the actuator is removing;
	// its value is the Unix time the removal started.
	TaintToBeDeleted = "ToBeDeletedByClusterAutoscaler"
	// TaintDeletionCandidate (PreferNoSchedule) marks an unneeded node.
	TaintDeletionCandidate = "DeletionCandidateOfClusterAutoscaler"
)

// Removal is a node to remove now.
type Removal struct {
	Node  string
	Group string
	// Empty is true when no pod needs to move.
	Empty bool
	// Unready is true for an unready node, or a GPU node whose GPUs are not
	// advertised.
	Unready       bool
	Utilization   Utilization
	UnneededSince time.Time
	// Evict are the pods to evict, in the node's order, each with the node
	// the simulation placed it on. The scheduler has the last word.
	Evict []Move
	// DaemonSetPods are DaemonSet pods to evict for a graceful shutdown,
	// following the DaemonSetEviction* options; they need no new home.
	DaemonSetPods []*v1.Pod
	// EvictOneByOne is set when a PodDisruptionBudget allows fewer
	// disruptions than the node has pods under it: each eviction must wait
	// for the previous pod's replacement.
	EvictOneByOne bool
	// Consolidation says, for people, which consolidation move removes the
	// node; empty when scale-down removes it.
	Consolidation string
	// Repair says, for people, why node repair removes the node (which
	// health signal, since when); empty otherwise.
	Repair string
	// Interruption is the signal (a taint key, or the end of the capacity
	// block the node runs on) by which the cloud said it is taking the
	// node away; empty for a voluntary removal. Such a
	// removal is not called off: the drain must end by Deadline, the end
	// of the notice, whatever the node's pods and budgets say.
	Interruption string
	Deadline     time.Time
}

// Move is a pod to evict and where it is expected to run next.
type Move struct {
	Pod *v1.Pod
	To  string
}

// Utilization is how much of a node its pods request, the way scale-down
// judges it: requests, never actual usage.
type Utilization struct {
	// Resource is what the node is judged by: the larger of cpu and memory,
	// or the GPUs on a GPU node.
	Resource v1.ResourceName
	// Value is Resource's requested over allocatable.
	Value float64
	// CPU and Memory are requested over allocatable; both are left at zero
	// on GPU nodes, where they do not count.
	CPU, Memory float64
	// GPU is requested over allocatable accelerators, in whole-device
	// equivalents: a MIG slice counts its share of a GPU, a time-sliced
	// replica its share, a NeuronCore its share of a Neuron device.
	GPU float64
	// GPUNode marks a node judged by its GPUs.
	GPUNode bool
}

// TaintedToBeDeleted tells whether node carries a ToBeDeletedByClusterAutoscaler
// taint set less than maxAge before now. A taint older than that, or one
// without a readable time, belongs to a removal that died: the node is
// judged again, as the Cluster Autoscaler does.
func TaintedToBeDeleted(node *v1.Node, now time.Time, maxAge time.Duration) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Key != TaintToBeDeleted {
			continue
		}
		sec, err := strconv.ParseInt(t.Value, 10, 64)
		if err != nil {
			return false
		}
		return now.Sub(time.Unix(sec, 0)) < maxAge
	}
	return false
}
