package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// AnnotationSafeToEvict set to "false" keeps a pod's node; set to "true" it
// lets a pod move although it has no controller, lives in kube-system or
// uses local storage. PodDisruptionBudgets still apply.
const AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"

// RuleSafeToEvict blocks pods annotated safe-to-evict "false": their owners
// said that evicting them is expensive (long training runs, batch jobs).
// The "true" value is read by the rules it overrides, through SafeToEvict.
type RuleSafeToEvict struct{}

// Name implements Rule.
func (RuleSafeToEvict) Name() string { return "SafeToEvict" }

// Check implements Rule.
func (RuleSafeToEvict) Check(_ *Context, pod *v1.Pod) Verdict {
	if pod.Annotations[AnnotationSafeToEvict] == "false" {
		return block(CodeNotSafeToEvict, fmt.Sprintf(
			"pod %s is annotated %s=false", podKey(pod), AnnotationSafeToEvict))
	}
	return Verdict{}
}

// SafeToEvict reports whether pod is annotated safe-to-evict "true".
func SafeToEvict(pod *v1.Pod) bool { return pod.Annotations[AnnotationSafeToEvict] == "true" }
