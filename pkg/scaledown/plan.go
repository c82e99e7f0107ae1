package scaledown

import (
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Input is everything one planning loop looks at.
type Input struct {
	// Now is the decision time.
	Now time.Time
	// Snapshot is the cluster: nodes with their bound pods and node groups
	// with their target sizes. Plan changes it while it works and leaves it
	// exactly as it found it.
	Snapshot *snapshot.Snapshot
	// PDBs are the cluster's PodDisruptionBudgets.
	PDBs []*policyv1.PodDisruptionBudget
	// Replicas are the replica counts of the ReplicaSets and
	// ReplicationControllers, for MinReplicaCount; nil when unknown.
	Replicas drain.Replicas
	// LastScaleUp, LastScaleDelete and LastScaleDownFailure are when the
	// cluster last grew, last lost a node to scale-down, and last failed to
	// remove one; zero when never. They start the delays of Options.
	LastScaleUp, LastScaleDelete, LastScaleDownFailure time.Time
	// Deleting are the removals the actuator has in flight.
	Deleting []Deletion
	// Reserved are nodes that must stay whatever their use, with why (the
	// new nodes of a consolidation replacement, until the nodes they
	// replace are drained onto them). They still take moved pods.
	Reserved map[string]string
	// Readiness is the loop's definition of a ready node (start-up taints,
	// accelerators advertised), shared with scale-up; nil classifies with
	// clusterstate's defaults.
	Readiness clusterstate.Classifier
}

// Deletion is a node removal in progress.
type Deletion struct {
	Node string
	// Group is the node's group; the group's target size does not reflect
	// the removal until it completes.
	Group string
	// Drain is true when the node had pods to evict.
	Drain bool
}

// Plan is the outcome of one loop. Every node of the snapshot is in exactly
// one of Delete and Kept. All lists are in a fixed order.
type Plan struct {
	Now time.Time
	// Delete are the nodes to remove now: empty nodes first, then nodes to
	// drain, those whose pods must be evicted one by one last.
	Delete []disruption.Removal
	// Unneeded are the nodes that could be removed but wait (for their
	// unneeded time, a cooldown or a parallelism limit), by name. They are
	// in Kept too, with the reason they wait.
	Unneeded []Unneeded
	// Kept says, for every node not in Delete, why it stays, by name.
	Kept []Kept
	// SoftTaint are unneeded nodes to taint DeletionCandidateOfClusterAutoscaler
	// (PreferNoSchedule), so the scheduler avoids them; SoftUntaint are nodes
	// carrying that taint that are needed again. Both by name, each at most
	// MaxBulkSoftTaintCount long.
	SoftTaint, SoftUntaint []string
	// CooldownUntil is when the delays after scale-up, removal and failure
	// end; zero when none applies. CooldownReason says which delay binds.
	CooldownUntil  time.Time
	CooldownReason string
	// MaxGracefulTermination caps the grace period the actuator gives each
	// evicted pod.
	MaxGracefulTermination time.Duration
}

// Unneeded is a node that could be removed but waits.
type Unneeded struct {
	Node  string
	Group string
	// Since is when the node was first found unneeded, in an unbroken run
	// of loops.
	Since time.Time
	// Wait is how long until the node has been unneeded long enough; zero
	// when it has and waits for another reason.
	Wait   time.Duration
	Empty  bool
	Reason Reason
}

// Kept is a node that stays in this loop, and why.
type Kept struct {
	Node  string
	Group string
	// Reason is a stable code; Message says the same for people, with the
	// numbers and the flag or annotation to change.
	Reason  Reason
	Message string
	// Pod and PodCode name the pod that keeps the node and the drain rule's
	// code, for ReasonBlockedByPod and ReasonNoPlaceToMovePods.
	Pod     *v1.Pod
	PodCode drain.Code
}
