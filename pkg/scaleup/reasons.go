package scaleup

import "github.com/gpuscale/gpuscale/pkg/status"

// Reason is a stable code for why a node group does not help some pending
// pods. Where the Cluster Autoscaler names the same reason, the code
// follows its wording.
type Reason string

// Reasons a pod is not considered at all (GroupReason.Group is "").
const (
	// ReasonExpendable: the pod's priority is below
	// --expendable-pods-priority-cutoff.
	ReasonExpendable Reason = "ExpendablePod"
	// ReasonTooNew: the pod is younger than --new-pod-scale-up-delay.
	ReasonTooNew Reason = "NewPodScaleUpDelay"
	// ReasonUnsafe: the cluster is too unhealthy to autoscale (the health
	// brake of --ok-total-unready-count and --max-total-unready-percentage).
	ReasonUnsafe Reason = "ClusterUnhealthy"
)

// Reasons a group cannot grow at all.
const (
	// ReasonNoTemplate: the group has no template node to simulate.
	ReasonNoTemplate Reason = "NoTemplateNode"
	// ReasonBackedOff: the group failed to provision recently.
	ReasonBackedOff Reason = "BackedOff"
	// ReasonMaxSize: the group's target is at its max size.
	ReasonMaxSize Reason = status.ReasonMaxNodeGroupSize
	// ReasonClusterLimit: a cluster-wide limit (--max-nodes-total,
	// --cores-total, --memory-total, --gpu-total) is reached.
	ReasonClusterLimit Reason = status.ReasonClusterLimit
	// ReasonQueuedOnly: the group takes queued capacity only; it grows for
	// ProvisioningRequests of the queued class, not for other pods.
	ReasonQueuedOnly Reason = "QueuedCapacityOnly"
	// ReasonNotQueued: a queued request's pods, and the group takes no
	// queued capacity.
	ReasonNotQueued Reason = "NoQueuedCapacity"
	// ReasonBlockEnded: the capacity block backing the group has ended;
	// the cloud launches none of its nodes.
	ReasonBlockEnded Reason = "CapacityBlockEnded"
)

// Reasons found while simulating the group's template node.
const (
	// ReasonNotFit: the pod does not fit an empty template node;
	// GroupReason.Predicate names the failing check.
	ReasonNotFit Reason = "NotFitTemplate"
	// ReasonPartial: the chosen group took only some of these pods (a
	// limit or the estimate stopped it).
	ReasonPartial Reason = "PartialScaleUp"
	// ReasonOtherGroupChosen: the group could take the pods, but the
	// expanders chose another this loop.
	ReasonOtherGroupChosen Reason = "OtherGroupChosen"
)
