package drain

import v1 "k8s.io/api/core/v1"

// AnnotationMirrorPod marks the API server's copy of a static pod, which the
// kubelet runs from a manifest on the node.
const AnnotationMirrorPod = v1.MirrorPodAnnotationKey

// RuleMirrorPod skips mirror pods: they live and die with their node and
// cannot be evicted.
type RuleMirrorPod struct{}

// Name implements Rule.
func (RuleMirrorPod) Name() string { return "MirrorPod" }

// Check implements Rule.
func (RuleMirrorPod) Check(_ *Context, pod *v1.Pod) Verdict {
	if IsMirrorPod(pod) {
		return skip(CodeMirrorPod)
	}
	return Verdict{}
}

// IsMirrorPod reports whether pod is a mirror pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirrorPod]
	return ok
}
