// Package repair is node repair as a policy of the disruption layer: a
// node whose accelerators fail (a health condition an agent on the node
// sets, or GPUs that were advertised and are no longer allocatable) is
// removed once it has been unhealthy for the condition's toleration time,
// so that its pods find healthy capacity and the group gets a working node
// in its place.
//
// Repair is voluntary disruption in the sense of pkg/disruption: it obeys
// the operator's budgets and maintenance windows and the drain rules
// (do-not-disrupt among them) as scale-down and consolidation do. It adds
// two limits of its own. A share cap: never more than a set percentage of
// a group's nodes under repair at once. And a per-group health brake: when
// more of a group looks broken than a set count and percentage, the cause
// is more likely the group (a bad image, a driver roll-out, a zone) than
// its nodes, and replacing them would only churn; nothing of that group is
// repaired until it recovers. Karpenter's node repair stops the same way
// when more than 20% of a NodePool is unhealthy.
//
// The package is pure: Plan takes the snapshot, the time and what the
// loop remembers, and returns the repairs to start and why every other
// unhealthy node waits.
package repair
