package scaledown

import (
	rsim "github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Reason is a stable code for why a node is not removed in this loop. Where
// the Cluster Autoscaler names the same reason, the code is its name.
type Reason string

// Reasons found before any simulation.
const (
	// ReasonBeingDeleted: the node carries a recent
	// ToBeDeletedByClusterAutoscaler taint or is in Input.Deleting.
	ReasonBeingDeleted Reason = "CurrentlyBeingDeleted"
	// ReasonScaleDownDisabled: the node is annotated
	// cluster-autoscaler.kubernetes.io/scale-down-disabled=true.
	ReasonScaleDownDisabled = Reason(rsim.ExemptScaleDownDisabled)
	// ReasonNotAutoscaled: the node is in no node group of the snapshot.
	ReasonNotAutoscaled = Reason(rsim.ExemptNotAutoscaled)
	// ReasonUnreadyDisabled: the node is unready and UnreadyEnabled is off.
	ReasonUnreadyDisabled Reason = "ScaleDownUnreadyDisabled"
	// ReasonNotUnderutilized: utilization is at or above the threshold.
	ReasonNotUnderutilized Reason = "NotUnderutilized"
	// ReasonReserved: the node is reserved for pods on their way to it
	// (Input.Reserved).
	ReasonReserved Reason = "ReservedForReplacement"
	// ReasonDoNotDisrupt: the node is annotated gpuscale.dev/do-not-disrupt
	// or karpenter.sh/do-not-disrupt "true": no voluntary disruption takes
	// it.
	ReasonDoNotDisrupt = Reason(rsim.ExemptDoNotDisrupt)
)

// Reasons found while simulating the removal.
const (
	// ReasonMinSize: removing the node would take its group below its
	// minimum size, counting target size, deletions in progress and nodes
	// already found unneeded in this loop.
	ReasonMinSize Reason = status.ReasonMinNodeGroupSize
	// ReasonClusterMinimum: removing the node would take the cluster below a
	// minimum of --cores-total, --memory-total or --gpu-total.
	ReasonClusterMinimum Reason = "MinimalResourceLimitExceeded"
	// ReasonBlockedByPod: a drain rule blocks one of the node's pods; Kept
	// names the pod and the rule's code.
	ReasonBlockedByPod Reason = "BlockedByPod"
	// ReasonNoPlaceToMovePods: a pod that must move fits on no other node.
	ReasonNoPlaceToMovePods Reason = "NoPlaceToMovePods"
	// ReasonCandidateLimit: NonEmptyCandidatesCount non-empty nodes were
	// already found unneeded, so this one was not simulated.
	ReasonCandidateLimit Reason = "NonEmptyCandidatesLimitReached"
)

// Reasons for nodes that are unneeded but wait.
const (
	// ReasonNotUnneededLongEnough: a ready node unneeded for less than
	// UnneededTime.
	ReasonNotUnneededLongEnough Reason = "NotUnneededLongEnough"
	// ReasonNotUnreadyLongEnough: an unready node unneeded for less than
	// UnreadyTime.
	ReasonNotUnreadyLongEnough Reason = "NotUnreadyLongEnough"
	// ReasonGPUsNotAdvertised: a GPU node whose device plugin has not
	// advertised its GPUs; it waits UnreadyTime like an unready node, so a
	// node still starting its plugin is not removed.
	ReasonGPUsNotAdvertised Reason = "GPUsNotAdvertised"
	// ReasonCooldown: scale-down is paused after a scale-up, a removal or a
	// failed removal.
	ReasonCooldown Reason = "ScaleDownInCooldown"
	// ReasonParallelismLimit: MaxScaleDownParallelism nodes are already being
	// removed.
	ReasonParallelismLimit Reason = "MaxScaleDownParallelismReached"
	// ReasonDrainParallelismLimit: MaxDrainParallelism non-empty nodes are
	// already being drained.
	ReasonDrainParallelismLimit Reason = "MaxDrainParallelismReached"
	// ReasonDependsOnWaitingNodes: the node's pods fit elsewhere only if
	// unneeded nodes that wait are removed first (a pod's required
	// partner, or room, comes from one of them); it goes after them.
	ReasonDependsOnWaitingNodes Reason = "DependsOnWaitingNodes"
	// ReasonDisruptionBudget: the node's group has as many nodes disrupted
	// at once as a --disruption-budget allows.
	ReasonDisruptionBudget Reason = "DisruptionBudgetReached"
	// ReasonOutsideWindow: a --disruption-window covers the node's group
	// and none is open; the node keeps its unneeded clock and goes when
	// one opens.
	ReasonOutsideWindow Reason = "OutsideDisruptionWindow"
	// ReasonOnCompletionPod: a pod annotated safe-to-evict "on-completion"
	// still runs on the node; it is removed once the pod has completed
	// (upstream's BlockedByOnCompletionPod).
	ReasonOnCompletionPod Reason = "BlockedByOnCompletionPod"
)
