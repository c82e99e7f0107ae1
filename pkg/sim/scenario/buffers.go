package scenario

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
)

// CapacityBuffer is warm room the autoscaler holds, as a CapacityBuffer
// (autoscaling.x-k8s.io/v1beta1) asks for it: chunks shaped like Pod, or
// like a Deployment workload's pods (Workload, which Percentage is of).
// The autoscaler plans with them when
// --capacity-buffer-pod-injection-enabled is set (autoscaler settings).
type CapacityBuffer struct {
	Name string `json:"name"`
	// Namespace defaults to "default".
	Namespace string `json:"namespace,omitempty"`
	// Pod is the shape of one chunk (the buffer's podTemplateRef);
	// Workload names a workload with a Deployment whose pods and replicas
	// the buffer borrows (its scalableRef). Exactly one is set.
	Pod      *PodTemplate `json:"pod,omitempty"`
	Workload string       `json:"workload,omitempty"`
	// Replicas, Percentage and Limits are the buffer's spec fields.
	Replicas   *int32          `json:"replicas,omitempty"`
	Percentage *int32          `json:"percentage,omitempty"`
	Limits     v1.ResourceList `json:"limits,omitempty"`
}

// Object is the buffer as the API would hold it; its PodTemplate is named
// after it.
func (b CapacityBuffer) Object() *capacitybuffer.CapacityBuffer {
	out := &capacitybuffer.CapacityBuffer{Spec: capacitybuffer.Spec{Replicas: b.Replicas, Percentage: b.Percentage}}
	out.Namespace, out.Name = b.Namespace, b.Name
	if b.Limits != nil {
		l := b.Limits.DeepCopy()
		out.Spec.Limits = &l
	}
	if b.Pod != nil {
		out.Spec.PodTemplateRef = &capacitybuffer.LocalObjectRef{Name: b.Name}
	} else {
		out.Spec.ScalableRef = &capacitybuffer.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: b.Workload}
	}
	return out
}

// validateBuffers checks each buffer against the workloads: it must
// resolve (capacitybuffer.Resolve) at the start of the run.
func (s *Scenario) validateBuffers() []error {
	var errs []error
	seen := map[string]bool{}
	src := capacitybuffer.Sources{Templates: map[string]*v1.PodTemplate{}, Scalables: map[capacitybuffer.ScalableKey]capacitybuffer.Scalable{}}
	for _, w := range s.Workloads {
		if w.Deployment != nil {
			src.Scalables[capacitybuffer.ScalableKey{Namespace: w.Namespace, Group: "apps", Kind: "Deployment", Name: w.Name}] =
				capacitybuffer.Scalable{Template: v1.PodTemplateSpec{Spec: w.Pod.Spec()}, Replicas: int32(w.Deployment.Replicas)}
		}
	}
	for i, b := range s.CapacityBuffers {
		path := fmt.Sprintf("capacityBuffers[%d]", i)
		if msgs := validation.IsDNS1123Subdomain(b.Name); len(msgs) > 0 || seen[b.Namespace+"/"+b.Name] {
			errs = append(errs, fmt.Errorf("%s.name: must be a unique DNS subdomain in its namespace, got %q", path, b.Name))
		}
		seen[b.Namespace+"/"+b.Name] = true
		if (b.Pod == nil) == (b.Workload == "") {
			errs = append(errs, fmt.Errorf("%s: set one of pod and workload", path))
			continue
		}
		if b.Pod != nil {
			src.Templates[b.Namespace+"/"+b.Name] = &v1.PodTemplate{Template: v1.PodTemplateSpec{Spec: b.Pod.Spec()}}
			src.Templates[b.Namespace+"/"+b.Name].Name = b.Name
		}
		if _, err := capacitybuffer.Resolve(b.Object(), src); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	return errs
}
