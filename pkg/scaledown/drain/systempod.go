package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleSystemPod blocks kube-system pods that no PodDisruptionBudget covers
// (--skip-nodes-with-system-pods): cluster add-ons are often single replicas
// whose restart hurts everyone. A budget, any budget, says the owner thought
// about disruption; the PodDisruptionBudget rule then checks its allowance.
// Pods annotated safe-to-evict "true" pass.
type RuleSystemPod struct{}

// Name implements Rule.
func (RuleSystemPod) Name() string { return "SystemPod" }

// Check implements Rule.
func (RuleSystemPod) Check(c *Context, pod *v1.Pod) Verdict {
	if pod.Namespace != metav1.NamespaceSystem || SafeToEvict(pod) || c.Budgets.Covers(pod) {
		return Verdict{}
	}
	return block(CodeSystemPod, fmt.Sprintf(
		"pod %s is a kube-system pod with no PodDisruptionBudget; add one, annotate it %s=true "+
			"or set --skip-nodes-with-system-pods=false to let it move",
		podKey(pod), AnnotationSafeToEvict))
}
