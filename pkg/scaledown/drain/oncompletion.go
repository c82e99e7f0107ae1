package drain

import (
	v1 "k8s.io/api/core/v1"
)

// SafeToEvictOnCompletion is the safe-to-evict value that asks the
// autoscaler to let a pod finish rather than evict it: its node may be
// found unneeded, but is removed only once the pod has completed. The
// upstream Cluster Autoscaler reads the same value (its oncompletion
// drainability rule).
const SafeToEvictOnCompletion = "on-completion"

// RuleOnCompletion lets a pod annotated safe-to-evict "on-completion" run
// to completion: the pod is not moved in the removal simulation (it will be
// gone), and its node waits (Wait) while the pod runs. A completed pod is
// terminal and skipped by the rules before this one.
type RuleOnCompletion struct{}

// Name implements Rule.
func (RuleOnCompletion) Name() string { return "OnCompletion" }

// Check implements Rule.
func (RuleOnCompletion) Check(_ *Context, pod *v1.Pod) Verdict {
	if pod.Annotations[AnnotationSafeToEvict] == SafeToEvictOnCompletion {
		return Verdict{Outcome: Wait, Code: CodeOnCompletion}
	}
	return Verdict{}
}
