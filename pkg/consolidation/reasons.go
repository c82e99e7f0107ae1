package consolidation

import "github.com/gpuscale/gpuscale/pkg/scaledown"

// Reason is a stable code for why a node is not consolidated in this pass.
// Where scale-down names the same reason, the code is the same.
type Reason string

// Reasons found before any simulation.
const (
	// ReasonDisabled: consolidation is off (Options.Enabled).
	ReasonDisabled Reason = "ConsolidationDisabled"
	// ReasonBeingDeleted: the node is in Input.Deleting or carries a recent
	// ToBeDeletedByClusterAutoscaler taint.
	ReasonBeingDeleted = Reason(scaledown.ReasonBeingDeleted)
	// ReasonBeingReplaced: the node is one a replacement in flight will
	// drain.
	ReasonBeingReplaced Reason = "BeingReplaced"
	// ReasonReplacementNode: the node was launched by a replacement in
	// flight and waits for the old nodes' pods.
	ReasonReplacementNode Reason = "ReplacementNode"
	// ReasonScaleDownDisabled: the node is annotated
	// cluster-autoscaler.kubernetes.io/scale-down-disabled=true.
	ReasonScaleDownDisabled = Reason(scaledown.ReasonScaleDownDisabled)
	// ReasonDoNotDisrupt: the node is annotated gpuscale.dev/do-not-disrupt
	// or karpenter.sh/do-not-disrupt "true".
	ReasonDoNotDisrupt = Reason(scaledown.ReasonDoNotDisrupt)
	// ReasonNotAutoscaled: the node is in no node group of the snapshot.
	ReasonNotAutoscaled = Reason(scaledown.ReasonNotAutoscaled)
	// ReasonNotReady: the node is not Ready, or its GPUs are not advertised
	// yet; scale-down judges such nodes.
	ReasonNotReady Reason = "NodeNotReady"
	// ReasonOutsideWindow: windows cover the node's group and none is open.
	ReasonOutsideWindow Reason = "OutsideConsolidationWindow"
	// ReasonBlockedByPod: a drain rule blocks one of the node's pods; Kept
	// names the pod and the rule's code.
	ReasonBlockedByPod = Reason(scaledown.ReasonBlockedByPod)
)

// Reasons found while planning moves.
const (
	// ReasonBudget: the group's disruption budget is used up by moves in
	// flight and moves planned in this pass.
	ReasonBudget Reason = "DisruptionBudgetReached"
	// ReasonMinSize: removing the node would take its group below its
	// minimum size.
	ReasonMinSize = Reason(scaledown.ReasonMinSize)
	// ReasonClusterMinimum: removing the node would take the cluster below
	// a minimum of --cores-total, --memory-total or --gpu-total.
	ReasonClusterMinimum = Reason(scaledown.ReasonClusterMinimum)
	// ReasonNoCheaperPlacement: the node's pods fit on no other node, and no
	// replacement that fits them saves at least MinSavings within the
	// limits.
	ReasonNoCheaperPlacement Reason = "NoCheaperPlacement"
	// ReasonReplacementChosen: a replacement was already chosen in this
	// pass (at most one a pass, so that each move is planned on the cluster
	// as it will be); the node is weighed again in the next pass.
	ReasonReplacementChosen Reason = "ReplacementChosenThisPass"
	// ReasonReceivesPods: a move of this pass plans pods onto the node, so
	// no replacement of this pass takes it (those pods would move twice).
	ReasonReceivesPods Reason = "ReceivesPodsThisPass"
	// ReasonNotStableLongEnough: a move takes the node, but it has been
	// consolidatable for less than StableTime.
	ReasonNotStableLongEnough Reason = "NotConsolidatableLongEnough"
)
