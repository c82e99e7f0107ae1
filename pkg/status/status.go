// Package status is what one autoscaling loop saw and decided, as data.
// The decision core (pkg/autoscaler) fills a Status every loop; the live
// shell renders it as the status ConfigMap, Kubernetes events and
// Prometheus metrics, the simulator reads it for its reports, and
// `gpuscale explain` reads the ConfigMap back into the same types. Every
// reason is a stable code with its parameters beside a message for people:
// nothing is ever parsed back out of text.
package status

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Reason codes the status document carries that its readers (explain,
// dashboards) act on; the planners' own codes take these values, so the
// two cannot drift apart.
const (
	ReasonMaxNodeGroupSize = "MaxNodeGroupSizeReached"
	ReasonMinNodeGroupSize = "NodeGroupMinSizeReached"
	ReasonClusterLimit     = "MaxResourceLimitReached"
)

// Kinds of consolidation move (Move.Kind).
const (
	MoveDelete  = "Delete"
	MoveReplace = "Replace"
)

// Status is one loop's account.
type Status struct {
	// Time is the loop's decision time.
	Time time.Time `json:"time"`
	// Cluster sums the whole cluster.
	Cluster Cluster `json:"cluster"`
	// NodeGroups are the managed groups, sorted by ID.
	NodeGroups []NodeGroup `json:"nodeGroups,omitempty"`
	// ScaleUps are the scale-ups decided in this loop, and Triggered the
	// pending pods they are for.
	ScaleUps  []ScaleUp `json:"scaleUps,omitempty"`
	Triggered []Ref     `json:"triggered,omitempty"`
	// Pending are the pending pods no scale-up helps, in equivalence
	// groups, each with the reason per node group.
	Pending []PendingPods `json:"pending,omitempty"`
	// Nodes are the nodes that are removed, unneeded or kept, with why,
	// sorted by name. Nodes outside every managed group are left out.
	Nodes []Node `json:"nodes,omitempty"`
	// Consolidation is set when consolidation is on: the moves started
	// this loop, those waiting for their stable time, and replacements in
	// flight.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
	// Repair is set when node repair is on: the unhealthy nodes and what
	// is done about each.
	Repair *Repair `json:"repair,omitempty"`
	// DevicesOverdue are registered nodes that waited past
	// --max-node-startup-time for their accelerators and no longer count
	// as upcoming.
	DevicesOverdue []string `json:"devicesOverdue,omitempty"`
	// BypassedSchedulers are --bypassed-scheduler-names: their pods count
	// as pending without kube-scheduler's Unschedulable mark.
	BypassedSchedulers []string `json:"bypassedSchedulers,omitempty"`
	// OtherSchedulers count the pods waiting for a node that the loop left
	// alone because another scheduler places them, sorted by scheduler.
	OtherSchedulers []SchedulerPods `json:"otherSchedulers,omitempty"`
	// Buffers are the CapacityBuffers whose placeholder pods the loop
	// planned with, sorted by namespace and name. Placeholders never count
	// in Triggered or Pending.
	Buffers []Buffer `json:"buffers,omitempty"`
	// Forecasts are the inference workloads whose warm capacity the
	// forecast sized (--forecast-buffers), sorted by namespace and name.
	Forecasts []Forecast `json:"forecasts,omitempty"`
}

// Forecast is how one loop sized an inference workload's warm capacity:
// the demand its HPA reads, forecast one lead time ahead, in replicas,
// less the replicas running.
type Forecast struct {
	// Namespace and Name are the workload; Buffer the name of the
	// CapacityBuffer its placeholders hold room under (in Buffers).
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Buffer    string `json:"buffer"`
	// Demand is the metric now, Forecast what it is forecast to be one
	// lead time ahead (headroom included).
	Demand   float64 `json:"demand"`
	Forecast float64 `json:"forecast"`
	// Replicas are the warm replicas held: ForecastReplicas less Running,
	// cut by Bound ("max", "maxReplicas") when one applied.
	ForecastReplicas int32  `json:"forecastReplicas"`
	Running          int32  `json:"running"`
	Replicas         int32  `json:"replicas"`
	Bound            string `json:"bound,omitempty"`
	// Message says why this size, in one line.
	Message string `json:"message"`
}

// Buffer is what one loop did with a CapacityBuffer's placeholder pods.
type Buffer struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas are the chunks held; Fit of them have room on registered or
	// upcoming nodes, ScaleUp are what this loop's scale-ups are for, and
	// NoRoom found none (Reason and Message say why, for the first).
	Replicas int    `json:"replicas"`
	Fit      int    `json:"fit,omitempty"`
	ScaleUp  int    `json:"scaleUp,omitempty"`
	NoRoom   int    `json:"noRoom,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	// Nodes are the registered nodes the placeholders hold room on,
	// sorted; scale-down and consolidation leave that room.
	Nodes []string `json:"nodes,omitempty"`
}

// Key is NAMESPACE/NAME.
func (b Buffer) Key() string { return b.Namespace + "/" + b.Name }

// ReasonSchedulerNotBypassed: the pods' scheduler is neither
// default-scheduler nor in --bypassed-scheduler-names.
const ReasonSchedulerNotBypassed = "SchedulerNotBypassed"

// SchedulerPods are one scheduler's pods the loop left alone.
type SchedulerPods struct {
	Scheduler string `json:"scheduler"`
	Pods      int    `json:"pods"`
	// Reason is a stable code; Message says it for people, with the flag
	// to change.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Cluster is the cluster-wide part.
type Cluster struct {
	Health Health `json:"health"`
	// Nodes counts the nodes of the managed groups.
	Nodes NodeCounts `json:"nodes"`
	// Unmanaged counts registered nodes in no managed group.
	Unmanaged int `json:"unmanaged,omitempty"`
	// ScaleUpInProgress: some group waits for nodes it asked for.
	ScaleUpInProgress bool      `json:"scaleUpInProgress,omitempty"`
	ScaleDown         ScaleDown `json:"scaleDown"`
}

// Health says whether the loop may scale at all.
type Health struct {
	// Safe is false when the cluster is too unhealthy to autoscale (the
	// health brake): the loop then neither scales up nor down.
	Safe bool `json:"safe"`
	// Reason is a stable code when Safe is false; Message says it for people.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// NodeCounts tally nodes by state.
type NodeCounts struct {
	// Registered nodes are Node objects; Ready + Unready + NotStarted is
	// Registered. Unready includes DevicesOverdue.
	Registered int `json:"registered"`
	Ready      int `json:"ready"`
	Unready    int `json:"unready"`
	// NotStarted nodes are registered and still starting (not Ready yet,
	// startup taints, devices not advertised) within their startup time.
	NotStarted int `json:"notStarted"`
	// AwaitingDevices are the NotStarted nodes waiting only for their
	// accelerators to be advertised; DevicesOverdue waited past
	// --max-node-startup-time and no longer count as upcoming.
	AwaitingDevices int `json:"awaitingDevices,omitempty"`
	DevicesOverdue  int `json:"devicesOverdue,omitempty"`
	// Unregistered counts nodes a group's target holds that have no Node
	// object; LongUnregistered those of them past --max-node-provision-time.
	Unregistered     int `json:"unregistered"`
	LongUnregistered int `json:"longUnregistered,omitempty"`
	// BeingDeleted are nodes whose removal is in progress.
	BeingDeleted int `json:"beingDeleted,omitempty"`
}

// ScaleDown is the cluster-wide scale-down state.
type ScaleDown struct {
	// Skipped is a stable code when scale-down did not run this loop;
	// SkippedMessage says why for people.
	Skipped        string `json:"skipped,omitempty"`
	SkippedMessage string `json:"skippedMessage,omitempty"`
	// Candidates counts unneeded nodes and nodes removed this loop.
	Candidates int `json:"candidates"`
	// CooldownUntil is when the delays after scale-up, removal and failure
	// end; CooldownReason names the delay that binds.
	CooldownUntil  time.Time `json:"cooldownUntil,omitzero"`
	CooldownReason string    `json:"cooldownReason,omitempty"`
}

// NodeGroup is one managed group.
type NodeGroup struct {
	ID     string     `json:"id"`
	Min    int        `json:"min"`
	Max    int        `json:"max"`
	Target int        `json:"target"`
	Nodes  NodeCounts `json:"nodes"`
	// Upcoming counts nodes asked for or starting that pending pods may
	// count on.
	Upcoming int `json:"upcoming,omitempty"`
	// ScaleUp is NoActivity, InProgress (nodes asked for have not all
	// registered) or Backoff.
	ScaleUp Activity `json:"scaleUp"`
	// Candidates counts the group's unneeded nodes.
	Candidates int `json:"candidates,omitempty"`
	// Accelerators are the devices a template node of the group has, by
	// resource name ("nvidia.com/gpu": 8), for labelling metrics.
	Accelerators map[string]int64 `json:"accelerators,omitempty"`
}

// Scale-up activity states, as upstream names them.
const (
	ActivityNone       = "NoActivity"
	ActivityInProgress = "InProgress"
	ActivityBackoff    = "Backoff"
)

// Activity is a group's scale-up state.
type Activity struct {
	State string `json:"state"`
	// Since is when the state began (the scale-up request or the backoff).
	Since time.Time `json:"since,omitzero"`
	// Until ends a backoff.
	Until time.Time `json:"until,omitzero"`
	// Reason is a stable code of why the group is backed off (the cloud's
	// error class or the timeout); Message says it for people.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ScaleUp is one scale-up decided this loop.
type ScaleUp struct {
	Group string `json:"group"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	// Pods is how many pending pods the new nodes are expected to take.
	Pods int `json:"pods"`
	// Why says how the group was chosen.
	Why string `json:"why,omitempty"`
	// Deadline is when the group is backed off and the nodes that have
	// not registered are given back: the decision time plus the group's
	// own max node provision time (its options, else
	// --max-node-provision-time).
	Deadline time.Time `json:"deadline,omitzero"`
	// Options are every group the expanders weighed, the chosen one
	// included, in the order the chain ranked them.
	Options []Option `json:"options,omitempty"`
}

// Option is one node group the expanders weighed for a scale-up.
type Option struct {
	Group     string `json:"group"`
	NodeCount int    `json:"nodeCount"`
	PodCount  int    `json:"podCount"`
	// Verdict says what the expander chain made of it: the expander that
	// dropped it and why, or "chosen".
	Verdict string `json:"verdict,omitempty"`
	// The verdict as data: Chosen, or DroppedBy the expander that dropped
	// it with its Score there and the BestScore that expander kept, or
	// LostTieBreak when it tied with the chosen group to the end.
	Chosen       bool   `json:"chosen,omitempty"`
	DroppedBy    string `json:"droppedBy,omitempty"`
	Score        string `json:"score,omitempty"`
	BestScore    string `json:"bestScore,omitempty"`
	LostTieBreak bool   `json:"lostTieBreak,omitempty"`
}

// PendingPods are equivalent pending pods and why no group helps them.
type PendingPods struct {
	Pods    []Ref         `json:"pods"`
	Reasons []GroupReason `json:"reasons"`
}

// Message joins the reasons the way an event shows them: "node group a:
// why; node group b: why".
func (p PendingPods) Message() string {
	var b strings.Builder
	for i, r := range p.Reasons {
		if i > 0 {
			b.WriteString("; ")
		}
		if r.Group != "" {
			b.WriteString("node group " + r.Group + ": ")
		}
		b.WriteString(r.Message)
	}
	return b.String()
}

// GroupReason is why one node group (or, with Group "", the cluster)
// cannot help some pods.
type GroupReason struct {
	Group string `json:"group,omitempty"`
	// Reason is a stable code (scaleup.Reason).
	Reason string `json:"reason"`
	// Predicate names the scheduling check a template node failed, for
	// the reason that says a pod does not fit.
	Predicate string `json:"predicate,omitempty"`
	Message   string `json:"message"`
}

// Node states.
const (
	NodeRemoving = "Removing"
	NodeUnneeded = "Unneeded"
	NodeKept     = "Kept"
)

// Node is why one node of a managed group stays or goes.
type Node struct {
	Name  string `json:"name"`
	Group string `json:"group,omitempty"`
	// State is Removing, Unneeded or Kept.
	State string `json:"state"`
	// Reason is a stable code (scaledown.Reason); Message says the same
	// for people, with the flag or annotation to change.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Pod and DrainRule name the pod that keeps the node and the drain
	// rule's code.
	Pod       *Ref   `json:"pod,omitempty"`
	DrainRule string `json:"drainRule,omitempty"`
	// Buffers are the CapacityBuffers (namespace/name) whose placeholder
	// pods hold room on the node, sorted.
	Buffers []string `json:"buffers,omitempty"`
	// UnneededSince is when the node was first found unneeded.
	UnneededSince time.Time `json:"unneededSince,omitzero"`
}

// Ref names a pod.
type Ref struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
}

// String is NAMESPACE/NAME.
func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Consolidation is what consolidation did and waits for.
type Consolidation struct {
	Moves     []Move    `json:"moves,omitempty"`
	Waiting   []Waiting `json:"waiting,omitempty"`
	Replacing []Move    `json:"replacing,omitempty"`
	// Held is a stable code when consolidation did not plan in this loop
	// (ScaleDownNotRun, ScaleDownInCooldown, PodsWaitForCapacity), and
	// HeldMessage says why for people.
	Held        string `json:"held,omitempty"`
	HeldMessage string `json:"heldMessage,omitempty"`
}

// Move is a consolidation move: Delete (the nodes' pods fit elsewhere) or
// Replace (LaunchCount new nodes of LaunchGroup, then drain the nodes).
type Move struct {
	Kind        string    `json:"kind"`
	Nodes       []string  `json:"nodes"`
	LaunchGroup string    `json:"launchGroup,omitempty"`
	LaunchCount int       `json:"launchCount,omitempty"`
	PriceBefore float64   `json:"priceBefore,omitempty"`
	PriceAfter  float64   `json:"priceAfter,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	Message     string    `json:"message,omitempty"`
}

// Waiting is a move found that waits until its nodes have been
// consolidatable for the stable time.
type Waiting struct {
	Kind  string    `json:"kind"`
	Nodes []string  `json:"nodes"`
	Until time.Time `json:"until"`
}
