package provisioningrequest

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods are the pods a request stands for: Count of each pod set, shaped by
// its PodTemplate (templates holds those found in the request's namespace,
// by name). They are annotated as consumers of the request and owned by
// it, so the planner treats them as one group. Their names contain ':',
// which no real pod's name can, so they never collide with one. A missing
// template is an error naming every missing one.
func Pods(r *ProvisioningRequest, templates map[string]*v1.PodTemplate) ([]*v1.Pod, error) {
	var missing []string
	for _, ps := range r.Spec.PodSets {
		if templates[ps.PodTemplateRef.Name] == nil {
			missing = append(missing, ps.PodTemplateRef.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing pod templates, %d pod templates were referenced, %d templates were missing: %s",
			len(r.Spec.PodSets), len(missing), strings.Join(missing, ","))
	}
	yes := true
	owner := metav1.OwnerReference{APIVersion: Group + "/" + Version, Kind: Kind, Name: r.Name, UID: r.UID, Controller: &yes}
	pods := make([]*v1.Pod, 0, r.PodCount())
	for i, ps := range r.Spec.PodSets {
		tmpl := &templates[ps.PodTemplateRef.Name].Template
		for j := 0; j < int(ps.Count); j++ {
			name := fmt.Sprintf("provisioningrequest:%s:%d:%d", r.Name, i, j)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: r.Namespace, UID: types.UID(r.Namespace + "/" + name),
					Labels: copyMap(tmpl.Labels), Annotations: copyMap(tmpl.Annotations),
					OwnerReferences: []metav1.OwnerReference{owner}, CreationTimestamp: r.CreationTimestamp,
				},
				Spec:   *tmpl.Spec.DeepCopy(),
				Status: v1.PodStatus{Phase: v1.PodPending},
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[AnnotationConsume] = r.Name
			pod.Annotations[AnnotationClass] = r.Spec.ProvisioningClassName
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// ConsumerOf names the request a pod consumes (in the pod's namespace),
// from the current annotation or the deprecated one.
func ConsumerOf(pod *v1.Pod) (string, bool) {
	if name, ok := pod.Annotations[AnnotationConsume]; ok {
		return name, true
	}
	name, ok := pod.Annotations[AnnotationConsumeDeprecated]
	return name, ok
}
