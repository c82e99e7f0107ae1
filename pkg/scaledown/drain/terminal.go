package drain

import v1 "k8s.io/api/core/v1"

// RuleTerminalPod skips pods that have finished and will never run again:
// they hold no resources worth moving.
type RuleTerminalPod struct{}

// Name implements Rule.
func (RuleTerminalPod) Name() string { return "TerminalPod" }

// Check implements Rule.
func (RuleTerminalPod) Check(_ *Context, pod *v1.Pod) Verdict {
	if IsTerminal(pod) {
		return skip(CodeTerminalPod)
	}
	return Verdict{}
}

// IsTerminal reports whether pod will never be restarted: it failed, or it
// succeeded under restart policy Never or OnFailure (as the Cluster
// Autoscaler reads it).
func IsTerminal(pod *v1.Pod) bool {
	switch pod.Status.Phase {
	case v1.PodFailed:
		return true
	case v1.PodSucceeded:
		rp := pod.Spec.RestartPolicy
		return rp == v1.RestartPolicyNever || rp == v1.RestartPolicyOnFailure
	}
	return false
}
