package drain

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// LongTerminatingMargin is how long past its grace period a deleted pod may
// still be around before it is treated as gone (the Cluster Autoscaler's
// PodLongTerminatingExtraThreshold).
const LongTerminatingMargin = 30 * time.Second

// RuleLongTerminating skips pods that were deleted longer ago than their
// termination grace period plus LongTerminatingMargin: the kubelet should
// have killed them already, so they need no new home. A pod deleted more
// recently is judged like any other, so that a node is not removed the
// moment its pods are marked for deletion.
type RuleLongTerminating struct{}

// Name implements Rule.
func (RuleLongTerminating) Name() string { return "LongTerminating" }

// Check implements Rule.
func (RuleLongTerminating) Check(c *Context, pod *v1.Pod) Verdict {
	if IsLongTerminating(pod, c.Now) {
		return skip(CodeLongTerminating)
	}
	return Verdict{}
}

// IsLongTerminating reports whether pod has been terminating for longer than
// its grace period (30s when unset, the API default) plus
// LongTerminatingMargin at now.
func IsLongTerminating(pod *v1.Pod, now time.Time) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	deadline := pod.DeletionTimestamp.Add(time.Duration(grace)*time.Second + LongTerminatingMargin)
	return deadline.Before(now)
}
