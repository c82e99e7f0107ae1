package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// RulePodDisruptionBudget blocks a pod when a PodDisruptionBudget that covers
// it has no disruption left: the one it allows (status.disruptionsAllowed)
// minus what nodes already chosen in this loop will take. A budget with an
// invalid selector blocks every pod of its namespace rather than guess.
//
// Pods of one node do not take from each other here: like the Cluster
// Autoscaler, a node whose pods need more than what is left may still go,
// with its pods evicted one at a time (see Budgets.Consume).
type RulePodDisruptionBudget struct{}

// Name implements Rule.
func (RulePodDisruptionBudget) Name() string { return "PodDisruptionBudget" }

// Check implements Rule.
func (RulePodDisruptionBudget) Check(c *Context, pod *v1.Pod) Verdict {
	b := c.Budgets.Blocking(pod)
	if b == nil {
		return Verdict{}
	}
	if b.Err != nil {
		return block(CodeInvalidPDB, fmt.Sprintf(
			"pod %s: PodDisruptionBudget %s/%s has an invalid selector (%v), so no pod of namespace %s is moved",
			podKey(pod), b.Namespace, b.Name, b.Err, b.Namespace))
	}
	return block(CodeNotEnoughPDB, fmt.Sprintf(
		"pod %s: PodDisruptionBudget %s/%s allows no more disruptions (%d allowed, %d left in this loop)",
		podKey(pod), b.Namespace, b.Name, b.Allowed, b.Remaining))
}
