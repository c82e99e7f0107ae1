package drain

import v1 "k8s.io/api/core/v1"

// RuleExpendablePod skips pods whose priority is below the cutoff
// (--expendable-pods-priority-cutoff): overprovisioning placeholders and
// other pods their owners declared killable at any time. They neither block
// a node nor need a place elsewhere. Pods with no priority are never
// expendable.
type RuleExpendablePod struct {
	// Cutoff is the lowest priority that is not expendable.
	Cutoff int32
}

// Name implements Rule.
func (RuleExpendablePod) Name() string { return "ExpendablePod" }

// Check implements Rule.
func (r RuleExpendablePod) Check(_ *Context, pod *v1.Pod) Verdict {
	if IsExpendable(pod, r.Cutoff) {
		return skip(CodeExpendablePod)
	}
	return Verdict{}
}

// IsExpendable reports whether pod's priority is set and below cutoff.
func IsExpendable(pod *v1.Pod, cutoff int32) bool {
	return pod.Spec.Priority != nil && *pod.Spec.Priority < cutoff
}
