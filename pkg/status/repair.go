package status

import "time"

// States of an unhealthy node (RepairNode.State); node repair's planner
// takes these values.
const (
	RepairRepairing = "Repairing"
	RepairRemoving  = "Removing"
	RepairHeld      = "Held"
)

// EventNodeUnhealthy is the Warning event on a node node repair found
// unhealthy and holds; AnnotationRepairReason on it carries
// RepairNode.Reason.
const (
	EventNodeUnhealthy     = "NodeUnhealthy"
	AnnotationRepairReason = "gpuscale.dev/repair-reason"
)

// Repair is what node repair found and did in a loop: every unhealthy
// node of a managed group, with its state.
type Repair struct {
	Nodes []RepairNode `json:"nodes,omitempty"`
}

// RepairNode is an unhealthy node.
type RepairNode struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// Reason is UnhealthyCondition or GPUsMissing; Condition names the
	// condition as Type=Status for the former; Message says it for people.
	Reason    string `json:"reason"`
	Condition string `json:"condition,omitempty"`
	Message   string `json:"message,omitempty"`
	// Since is when the node became unhealthy, Due when its toleration
	// time ends.
	Since time.Time `json:"since"`
	Due   time.Time `json:"due"`
	// State is Repairing (its removal starts in this loop), Removing (a
	// removal is in flight) or Held; Held is then a stable code and
	// HeldMessage says why.
	State       string `json:"state"`
	Held        string `json:"held,omitempty"`
	HeldMessage string `json:"heldMessage,omitempty"`
}
