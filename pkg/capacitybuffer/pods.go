package capacitybuffer

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AnnotationBuffer marks a placeholder pod with the key of its buffer.
const AnnotationBuffer = "autoscaling.x-k8s.io/capacity-buffer"

// annotationSafeToEvict lets scale-down and consolidation move a
// placeholder like any replicated pod: its room must exist somewhere, not
// on one node.
const annotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"

// namePrefix starts every placeholder's name; ':' never appears in a real
// pod's name, so placeholders never collide with one.
const namePrefix = "capacitybuffer:"

// Pods are the placeholder pods of a buffer: Replicas copies of its
// template, pending, at the given priority (the core gives them the lowest
// priority a pod can have and still trigger a scale-up, so every real pod
// takes room before them). They are never created in the cluster.
func Pods(b Buffer, priority int32) []*v1.Pod {
	pods := make([]*v1.Pod, 0, b.Replicas)
	t := &b.Template
	for i := range int(b.Replicas) {
		name := namePrefix + b.Name + ":" + strconv.Itoa(i)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: b.Namespace, UID: types.UID(b.Namespace + "/" + name),
				Labels: copyMap(t.Labels), Annotations: copyMap(t.Annotations),
			},
			Spec:   *t.Spec.DeepCopy(),
			Status: v1.PodStatus{Phase: v1.PodPending},
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationBuffer] = b.Key()
		p.Annotations[annotationSafeToEvict] = "true"
		prio := priority
		p.Spec.Priority, p.Spec.PriorityClassName, p.Spec.NodeName = &prio, "", ""
		pods = append(pods, p)
	}
	return pods
}

// Of names the buffer (namespace/name) a placeholder pod holds room for.
func Of(pod *v1.Pod) (string, bool) {
	if !strings.HasPrefix(pod.Name, namePrefix) {
		return "", false
	}
	key, ok := pod.Annotations[AnnotationBuffer]
	return key, ok
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Options are the CapacityBuffer settings (upstream's flags).
type Options struct {
	// ControllerEnabled resolves buffers and writes their status
	// (--capacity-buffer-controller-enabled, false).
	ControllerEnabled bool
	// PodInjectionEnabled plans with the placeholder pods of buffers ready
	// for provisioning (--capacity-buffer-pod-injection-enabled, false).
	PodInjectionEnabled bool
}

// Enabled says whether the shells watch buffers at all.
func (o Options) Enabled() bool { return o.ControllerEnabled || o.PodInjectionEnabled }

// String is a one-line account, for logs.
func (o Options) String() string {
	return fmt.Sprintf("controller=%t podInjection=%t", o.ControllerEnabled, o.PodInjectionEnabled)
}
