package drain

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleSystemPod blocks kube-system pods that no PodDisruptionBudget covers
// (--skip-nodes-with-system-pods): cluster add-ons are often single replicas
// whose restart hurts everyone. A budget, any budget, says the owner thought
// about disruption; the PodDisruptionBudget rule then checks its allowance.
// Pods annotated safe-to-evict "true" pass.
//
// The block lasts DisruptionTimeout from the pod's creation
// (--blocking-system-pod-distruption-timeout, the upstream spelling): an
// older pod no longer blocks, as in the upstream Cluster Autoscaler since
// 1.33, so one stray add-on cannot keep a node forever. Unlike upstream, the
// rules after this one (safe-to-evict "false", local storage) still apply
// to it. A timeout of 0 lets every such pod move at once, as upstream's
// does; a pod with no creation time keeps blocking.
type RuleSystemPod struct {
	DisruptionTimeout time.Duration
}

// Name implements Rule.
func (RuleSystemPod) Name() string { return "SystemPod" }

// Check implements Rule.
func (r RuleSystemPod) Check(c *Context, pod *v1.Pod) Verdict {
	if pod.Namespace != metav1.NamespaceSystem || SafeToEvict(pod) || c.Budgets.Covers(pod) {
		return Verdict{}
	}
	created := pod.CreationTimestamp.Time
	if !created.IsZero() && c.Now.After(created.Add(r.DisruptionTimeout)) {
		return Verdict{}
	}
	age := "of unknown age"
	if !created.IsZero() {
		age = fmt.Sprintf("created %s ago", c.Now.Sub(created).Round(time.Second))
	}
	return block(CodeSystemPod, fmt.Sprintf(
		"pod %s is a kube-system pod with no PodDisruptionBudget, %s; it may move once %s old "+
			"(--blocking-system-pod-distruption-timeout), or add a PodDisruptionBudget, annotate it %s=true "+
			"or set --skip-nodes-with-system-pods=false",
		podKey(pod), age, r.DisruptionTimeout, AnnotationSafeToEvict))
}
