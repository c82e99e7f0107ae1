package consolidation

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Input is everything one consolidation pass looks at.
type Input struct {
	// Now is the decision time.
	Now time.Time
	// Snapshot is the cluster: nodes with their bound pods, and node groups
	// with their target sizes, templates and prices. Plan changes it while
	// it works and leaves it as it found it.
	Snapshot *snapshot.Snapshot
	// PDBs are the cluster's PodDisruptionBudgets.
	PDBs []*policyv1.PodDisruptionBudget
	// Replicas are the replica counts of the ReplicaSets and
	// ReplicationControllers, for --min-replica-count; nil when unknown.
	Replicas drain.Replicas
	// DaemonSets take their share of every replacement node.
	DaemonSets []*appsv1.DaemonSet
	// Deleting are node removals in flight (scale-down's and the drains of
	// moves carried out earlier), and any removal planned in this loop by
	// scale-down: those nodes neither move nor take pods.
	Deleting []scaledown.Deletion
	// Replacing are the replacements launched by earlier loops whose old
	// nodes are not drained yet.
	Replacing []Replacement
	// Ordered are, by group, the nodes the cloud was asked for that are
	// not registered (clusterstate's State.Ordered: on their way, the
	// replacements in flight among them, or never joined): the cluster's
	// maximums count them as scale-up does.
	Ordered map[string]int
	// State is what the previous pass returned in Plan.State (the zero
	// value the first time).
	State State
	// Readiness is the loop's definition of a ready node, shared with
	// scale-up and scale-down; nil classifies with clusterstate's defaults.
	Readiness clusterstate.Classifier
}

// Replacement is a replace move in flight: its new nodes were asked for,
// its old nodes wait for them to be Ready before they are drained. The loop
// keeps these and passes them back every pass until the drain is done or
// given up.
type Replacement struct {
	// Nodes are the nodes being replaced.
	Nodes []string
	// Group and Count are the replacement nodes asked for.
	Group string
	Count int
	// New are the replacement nodes registered so far. Until the old nodes
	// are drained they take no other pods in the simulation and are never
	// candidates.
	New []string
}

// State is what consolidation remembers from one pass to the next. Plan
// takes it in Input and returns the next one in Plan; nothing else is kept
// between passes.
type State struct {
	// Since is, for each node found consolidatable in every pass of an
	// unbroken run, when the run began.
	Since map[string]time.Time
}

// Plan is the outcome of one pass. Every node of the snapshot is in exactly
// one of a Move's Nodes and Kept.
type Plan struct {
	Now time.Time
	// Moves are to be carried out now, in order: deletions first, then at
	// most one replacement.
	Moves []Move
	// Waiting are moves found that wait for StableTime. Their nodes are in
	// Kept too, with ReasonNotStableLongEnough.
	Waiting []Waiting
	// Kept says, for every node not in a Move, why it stays, by name.
	Kept []Kept
	// State is to be passed to the next pass.
	State State
}

// MoveKind says what a move does.
type MoveKind string

const (
	// MoveDelete removes nodes whose pods fit on the remaining ones: drain
	// and delete them now, as scale-down removes a node.
	MoveDelete MoveKind = status.MoveDelete
	// MoveReplace removes nodes whose pods need new capacity that costs
	// less than they do: launch the replacement nodes, wait until every one
	// of them is Ready with its GPUs advertised, then drain and delete the
	// old nodes. Never drain before: the pods would have nowhere to go.
	MoveReplace MoveKind = status.MoveReplace
)

// Move is one consolidation action.
type Move struct {
	Kind MoveKind
	// Nodes are the nodes to remove, in the order they were chosen.
	Nodes []NodeRef
	// Launch is the replacement, for MoveReplace.
	Launch Launch
	// Evict are the pods to evict, each with where the simulation placed
	// it; the scheduler has the last word.
	Evict []Eviction
	// DaemonSetPods are DaemonSet pods to evict for a graceful shutdown;
	// they need no new home.
	DaemonSetPods []*v1.Pod
	// EvictOneByOne is set when a PodDisruptionBudget allows fewer
	// disruptions than the move has pods under it.
	EvictOneByOne bool
	// PriceBefore is the hourly price of Nodes; PriceAfter that of Launch.
	PriceBefore, PriceAfter float64
	// Message says why, for people.
	Message string
}

// NodeRef names a node and its group.
type NodeRef struct {
	Name, Group string
}

// Launch is the new capacity a replacement asks for.
type Launch struct {
	Group string
	Count int
}

// Eviction is a pod to evict and where it is expected to run next: a node's
// name, or for a pod expected on a replacement node, To empty and
// ToReplacement set.
type Eviction struct {
	Pod           *v1.Pod
	To            string
	ToReplacement bool
}

// Waiting is a move that waits until its nodes have been consolidatable for
// StableTime.
type Waiting struct {
	Kind  MoveKind
	Nodes []string
	// Since is when the most recently found of the nodes was first found
	// consolidatable; Wait is how long until the move may be carried out.
	Since time.Time
	Wait  time.Duration
}

// Kept is a node that stays in this pass, and why.
type Kept struct {
	Node, Group string
	// Reason is a stable code; Message says the same for people, with the
	// numbers and what to change.
	Reason  Reason
	Message string
	// Pod and PodCode name the pod that keeps the node and the drain rule's
	// code, for ReasonBlockedByPod.
	Pod     *v1.Pod
	PodCode drain.Code
}
