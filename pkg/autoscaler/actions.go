package autoscaler

import (
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

// Action is one thing a loop asks its shell to do. The shells carry
// actions out in the order of Plan.Actions through one actuator (package
// actuation): the live controller with cloud calls, taints and evictions,
// the simulator in memory. What became of each comes back as an Outcome in
// a later Input.
//
// The concrete types are DecreaseTarget, DeleteInstances, ScaleUp,
// SoftTaint, SoftUntaint, RemoveNodes, Cordon, Uncordon and
// SetRequestConditions.
type Action interface{ action() }

// DecreaseTarget lowers a group's target size by Delta for nodes that were
// asked for but never came; it never removes a registered node.
type DecreaseTarget struct {
	Group string
	Delta int
	// Reason is a stable code (a clusterstate failure reason, or the
	// cloud's error class for failed creations); Message says it for people.
	Reason, Message string
}

// DeleteInstances deletes instances that never registered as nodes,
// lowering the group's target by their number.
type DeleteInstances struct {
	Group       string
	ProviderIDs []string
	// Since is when the oldest of them was created or first seen.
	Since time.Time
}

// ScaleUp raises a group's target size by Delta (to NewTarget), or, when
// Queued is set, asks the cloud's queue for Delta nodes of the group at
// once: the cloud raises the target itself when it has them.
type ScaleUp struct {
	Group     string
	Delta     int
	NewTarget int
	// Why says how the group was chosen.
	Why string
	// Requests are the keys of the ProvisioningRequests some of the nodes
	// are for: their SetRequestConditions of the same plan depend on it.
	Requests []string
	// Queued names the cloud's queued request (a ProvisioningRequest of
	// the queued class); nil for a plain scale-up.
	Queued *QueuedScaleUp `json:",omitempty"`
}

// QueuedScaleUp is a queued request's name and its nodes' run duration.
type QueuedScaleUp = scaleup.QueuedScaleUp

// SoftTaint marks unneeded nodes DeletionCandidateOfClusterAutoscaler
// (PreferNoSchedule), so the scheduler avoids them.
type SoftTaint struct{ Nodes []string }

// SoftUntaint takes that mark off nodes that are needed again.
type SoftUntaint struct{ Nodes []string }

// RemoveNodes removes a batch of nodes: taint them all
// ToBeDeletedByClusterAutoscaler first, read their pods again, call off a
// node whose pods changed since the plan (RemovalAborted), evict the pods
// of the others through the Eviction API, then delete them through the
// cloud provider. Each removal ends in exactly one RemovalDone,
// RemovalFailed or RemovalAborted outcome.
type RemoveNodes struct {
	Removals []disruption.Removal
	// MaxGracefulTermination caps the grace period of each evicted pod.
	MaxGracefulTermination time.Duration
}

// Cordon taints nodes TaintConsolidating (NoSchedule): consolidation is
// replacing them, and they take no new pods while the replacement starts.
type Cordon struct {
	Nodes  []string
	Reason string
}

// Uncordon takes that taint off again: the replacement was given up.
type Uncordon struct {
	Nodes  []string
	Reason string
}

// TaintConsolidating (NoSchedule) marks a node that consolidation is
// replacing: it takes no new pods until it is drained, or until the
// replacement is given up.
const TaintConsolidating = "gpuscale.dev/consolidating"

func (DecreaseTarget) action()  {}
func (Cordon) action()          {}
func (Uncordon) action()        {}
func (DeleteInstances) action() {}
func (ScaleUp) action()         {}
func (SoftTaint) action()       {}
func (SoftUntaint) action()     {}
func (RemoveNodes) action()     {}

// Recorder receives every loop's input and plan, for a record to replay.
type Recorder interface {
	Record(in Input, plan Plan)
}
