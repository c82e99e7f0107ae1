package drain

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationDaemonSetPod marks a pod that should be treated as a DaemonSet
// pod although no DaemonSet controls it (the Cluster Autoscaler honours the
// same annotation).
const AnnotationDaemonSetPod = "cluster-autoscaler.kubernetes.io/daemonset-pod"

// RuleDaemonSetPod skips DaemonSet pods: their DaemonSet runs one on every
// matching node, so they need no new home. The actuator may still evict them
// for a graceful shutdown.
type RuleDaemonSetPod struct{}

// Name implements Rule.
func (RuleDaemonSetPod) Name() string { return "DaemonSetPod" }

// Check implements Rule.
func (RuleDaemonSetPod) Check(_ *Context, pod *v1.Pod) Verdict {
	if IsDaemonSetPod(pod) {
		return skip(CodeDaemonSetPod)
	}
	return Verdict{}
}

// IsDaemonSetPod reports whether a DaemonSet controls pod, or the pod is
// annotated as one.
func IsDaemonSetPod(pod *v1.Pod) bool {
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == "DaemonSet" {
		return true
	}
	return pod.Annotations[AnnotationDaemonSetPod] == "true"
}
