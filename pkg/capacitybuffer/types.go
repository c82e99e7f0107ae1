// Package capacitybuffer is the CapacityBuffer API
// (autoscaling.x-k8s.io/v1beta1) as gpuscale reads it: the object's types,
// how a buffer is resolved into a pod shape and a number of chunks (from a
// PodTemplate or from a scalable workload's template and replicas, capped
// by its limits), the status upstream's buffer controller writes, and the
// placeholder pods the decision core plans with. It does no I/O: the live
// shell converts objects from the API server into these types, the
// simulator builds them from its scenario.
//
// The upstream API module is not served by the module proxy this project
// builds from, so the types are written here with the same JSON as the
// upstream v1beta1 CRD.
package capacitybuffer

import (
	_ "embed"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API group, version, resource and kind.
const (
	Group    = "autoscaling.x-k8s.io"
	Version  = "v1beta1"
	Resource = "capacitybuffers"
	Kind     = "CapacityBuffer"
)

// GroupVersionResource of CapacityBuffers.
func GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}
}

// StrategyActiveCapacity is the one provisioning strategy served, and the
// default: placeholder pods make the autoscaler add and keep room.
const StrategyActiveCapacity = "buffer.x-k8s.io/active-capacity"

// Condition types, as upstream names them.
const (
	// ReadyForProvisioning: the buffer was resolved into a pod template and
	// a number of chunks (written by the buffer controller).
	ReadyForProvisioning = "ReadyForProvisioning"
	// Provisioning: the autoscaler plans with the buffer's placeholder pods
	// (written after each loop that injected them).
	Provisioning = "Provisioning"
)

// CapacityBuffer asks for spare room in the cluster: Replicas chunks of a
// pod shape, held by placeholder pods that are never created.
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitempty"`
}

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	Name string `json:"name"`
}

// ScalableRef names a workload whose pod template and replicas the
// buffer borrows.
type ScalableRef struct {
	APIGroup string `json:"apiGroup,omitempty"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// Spec is what the user asks for. Exactly one of PodTemplateRef and
// ScalableRef is set; of Replicas and Percentage the larger wins; Limits
// cap the chunks by their summed requests.
type Spec struct {
	ProvisioningStrategy *string          `json:"provisioningStrategy,omitempty"`
	PodTemplateRef       *LocalObjectRef  `json:"podTemplateRef,omitempty"`
	ScalableRef          *ScalableRef     `json:"scalableRef,omitempty"`
	Replicas             *int32           `json:"replicas,omitempty"`
	Percentage           *int32           `json:"percentage,omitempty"`
	Limits               *v1.ResourceList `json:"limits,omitempty"`
}

// Status is what the buffer controller and the autoscaler observed.
type Status struct {
	PodTemplateRef        *LocalObjectRef    `json:"podTemplateRef,omitempty"`
	Replicas              *int32             `json:"replicas,omitempty"`
	PodTemplateGeneration *int64             `json:"podTemplateGeneration,omitempty"`
	Conditions            []metav1.Condition `json:"conditions,omitempty"`
	ProvisioningStrategy  *string            `json:"provisioningStrategy,omitempty"`
}

// Key is namespace/name.
func (b *CapacityBuffer) Key() string { return b.Namespace + "/" + b.Name }

// Strategy is the buffer's provisioning strategy, the default when unset.
func (b *CapacityBuffer) Strategy() string {
	if b.Spec.ProvisioningStrategy == nil || *b.Spec.ProvisioningStrategy == "" {
		return StrategyActiveCapacity
	}
	return *b.Spec.ProvisioningStrategy
}

// Condition returns the condition of type t, nil when absent.
func (b *CapacityBuffer) Condition(t string) *metav1.Condition {
	for i := range b.Status.Conditions {
		if b.Status.Conditions[i].Type == t {
			return &b.Status.Conditions[i]
		}
	}
	return nil
}

// CRD is the CustomResourceDefinition of CapacityBuffers (YAML), the same
// file the chart installs from its crds/ folder.
//
//go:embed crd.yaml
var CRD []byte
