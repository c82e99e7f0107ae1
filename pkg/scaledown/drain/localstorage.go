package drain

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// AnnotationSafeToEvictLocalVolumes lists, comma-separated, the local volumes
// of a pod whose data may be lost when the pod moves.
const AnnotationSafeToEvictLocalVolumes = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"

// RuleLocalStorage blocks pods with node-local data that would be lost on
// eviction (--skip-nodes-with-local-storage): hostPath volumes and emptyDir
// volumes on disk. Memory-backed emptyDir volumes do not count (their data
// dies with the pod wherever it runs), nor do volumes listed in
// AnnotationSafeToEvictLocalVolumes. Pods annotated safe-to-evict "true" pass.
type RuleLocalStorage struct{}

// Name implements Rule.
func (RuleLocalStorage) Name() string { return "LocalStorage" }

// Check implements Rule.
func (RuleLocalStorage) Check(_ *Context, pod *v1.Pod) Verdict {
	if SafeToEvict(pod) {
		return Verdict{}
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isLocalVolume(vol) || listedSafe(pod, vol.Name) {
			continue
		}
		return block(CodeLocalStorage, fmt.Sprintf(
			"pod %s has local storage in volume %q; list it in annotation %s or annotate the pod %s=true to let it move",
			podKey(pod), vol.Name, AnnotationSafeToEvictLocalVolumes, AnnotationSafeToEvict))
	}
	return Verdict{}
}

func isLocalVolume(vol *v1.Volume) bool {
	return vol.HostPath != nil || (vol.EmptyDir != nil && vol.EmptyDir.Medium != v1.StorageMediumMemory)
}

// listedSafe reports whether name appears in the pod's
// safe-to-evict-local-volumes list. Spaces around names are ignored.
func listedSafe(pod *v1.Pod, name string) bool {
	rest := pod.Annotations[AnnotationSafeToEvictLocalVolumes]
	for rest != "" {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		if strings.TrimSpace(item) == name {
			return true
		}
	}
	return false
}
