package status

// Event reasons the autoscaler writes; upstream's wherever upstream writes
// the same event.
const (
	// On pods.
	EventTriggeredScaleUp  = "TriggeredScaleUp"
	EventNotTriggerScaleUp = "NotTriggerScaleUp"
	// On the status ConfigMap.
	EventScaledUpGroup = "ScaledUpGroup"
	// EventFailedToScaleUpGroup: the cloud will not create nodes a group
	// asked for (out of capacity, over quota); the message names the group
	// and the cloud's code and message.
	EventFailedToScaleUpGroup = "FailedToScaleUpGroup"
	EventScaleDownEmpty       = "ScaleDownEmpty"
	EventDeleteUnregistered   = "DeleteUnregistered"
	EventClusterUnhealthy     = "ClusterUnhealthy"
	// On nodes (ScaleDown also on the status ConfigMap, as upstream).
	EventScaleDown            = "ScaleDown"
	EventScaleDownFailed      = "ScaleDownFailed"
	EventScaleDownAborted     = "ScaleDownAborted"
	EventConsolidationReplace = "ConsolidationReplace"
	EventConsolidationGivenUp = "ConsolidationGivenUp"
	EventGPUsNotAdvertised    = "GPUsNotAdvertised"
	// EventInterrupted: the cloud is taking the node away; it is drained
	// by the end of its notice and its pods' replacement is ordered.
	EventInterrupted = "Interrupted"
)

// Annotations on the autoscaler's events carry what the message says as
// data, so that `gpuscale explain` reads codes rather than parsing text.
// The event recorder drops them when it folds many similar events on one
// object into one ("combined from similar events"); per-node and per-pod
// events are never folded that way in practice.
const (
	// AnnotationNodeGroup names the node group a scale-up or removal is in.
	AnnotationNodeGroup = "gpuscale.dev/node-group"
	// AnnotationNode names the node removed, on status ConfigMap events;
	// for an instance that never registered, its provider ID.
	AnnotationNode = "gpuscale.dev/node"
	// AnnotationRemovalReason says why a node is removed: one of the
	// Removal* values.
	AnnotationRemovalReason = "gpuscale.dev/removal-reason"
	// AnnotationScaleUps holds, on TriggeredScaleUp events, the scale-ups
	// of the loop as JSON (EventScaleUps): each with the options the
	// expanders weighed and their verdicts.
	AnnotationScaleUps = "gpuscale.dev/scale-ups"
)

// Why a node is removed (AnnotationRemovalReason). The first three are
// also the reason label of cluster_autoscaler_scaled_down_nodes_total.
const (
	RemovalEmpty         = "empty"
	RemovalUnderutilized = "underutilized"
	RemovalUnready       = "unready"
	// RemovalConsolidation: a consolidation move (delete, or the old
	// nodes of a replacement) made the cluster cheaper.
	RemovalConsolidation = "consolidation"
	// RemovalRepair: node repair removed an unhealthy node (its
	// accelerators failed).
	RemovalRepair = "repair"
	// RemovalUnregistered: an instance that never registered as a node
	// within --max-node-provision-time.
	RemovalUnregistered = "unregistered"
	// RemovalInterrupted: the cloud was taking the node away (a spot
	// interruption, a rebalance recommendation, a termination notice).
	RemovalInterrupted = "interrupted"
)

// MaxEventOptions bounds the options a TriggeredScaleUp event lists per
// scale-up; the chosen ones are always kept.
const MaxEventOptions = 20

// EventScaleUps is the JSON of AnnotationScaleUps.
type EventScaleUps struct {
	ScaleUps []ScaleUp `json:"scaleUps"`
	// OptionsOmitted counts options left out to stay under MaxEventOptions.
	OptionsOmitted int `json:"optionsOmitted,omitempty"`
}

// NewEventScaleUps copies scale-ups for an event, each with at most
// MaxEventOptions options: the chosen ones, then the others in order.
func NewEventScaleUps(sus []ScaleUp) EventScaleUps {
	out := EventScaleUps{ScaleUps: make([]ScaleUp, len(sus))}
	for i, su := range sus {
		out.ScaleUps[i] = su
		if len(su.Options) <= MaxEventOptions {
			continue
		}
		kept := make([]Option, 0, MaxEventOptions)
		for _, o := range su.Options {
			if o.Chosen {
				kept = append(kept, o)
			}
		}
		for _, o := range su.Options {
			if !o.Chosen && len(kept) < MaxEventOptions {
				kept = append(kept, o)
			}
		}
		out.OptionsOmitted += len(su.Options) - len(kept)
		out.ScaleUps[i].Options = kept
	}
	return out
}
