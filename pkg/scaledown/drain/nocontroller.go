package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleNoController blocks pods that nothing would recreate after eviction:
// pods with no controller (no ownerReference with controller=true) and, by
// default, pods whose controller is of a kind the autoscaler does not know to
// recreate its pods. Pods annotated safe-to-evict "true" pass.
type RuleNoController struct {
	// AllowCustomControllers lets pods of any controller kind move
	// (--skip-nodes-with-custom-controller-pods=false).
	AllowCustomControllers bool
}

// replicatedKinds are the controllers known to recreate evicted pods.
var replicatedKinds = map[string]bool{
	"ReplicaSet":            true,
	"ReplicationController": true,
	"Job":                   true,
	"StatefulSet":           true,
}

// Name implements Rule.
func (RuleNoController) Name() string { return "NoController" }

// Check implements Rule.
func (r RuleNoController) Check(_ *Context, pod *v1.Pod) Verdict {
	if SafeToEvict(pod) {
		return Verdict{}
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return block(CodeNotReplicated, fmt.Sprintf(
			"pod %s has no controller to recreate it; annotate it %s=true to let it move",
			podKey(pod), AnnotationSafeToEvict))
	}
	if !r.AllowCustomControllers && !replicatedKinds[ref.Kind] {
		return block(CodeCustomController, fmt.Sprintf(
			"pod %s is controlled by %s %s, not a ReplicaSet, ReplicationController, Job or StatefulSet; "+
				"set --skip-nodes-with-custom-controller-pods=false or annotate it %s=true to let it move",
			podKey(pod), ref.Kind, ref.Name, AnnotationSafeToEvict))
	}
	return Verdict{}
}
