// Package provisioningrequest is the ProvisioningRequest API
// (autoscaling.x-k8s.io/v1) as the decision core reads it: the object's
// types, the two classes the upstream Cluster Autoscaler serves
// (check-capacity and best-effort-atomic-scale-up), their conditions with
// the upstream reasons, the pods a request stands for, and the rules of a
// request's life (when it is tried, retried, booked, expired). It does no
// I/O; the live shell converts objects from the API server into these
// types, the simulator builds them itself.
//
// The upstream API module (k8s.io/autoscaler/cluster-autoscaler/apis) is
// not served by the module proxy this project builds from, so the types
// are written here, field for field with the upstream v1 CRD.
package provisioningrequest

import (
	_ "embed"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API group, version and resource.
const (
	Group    = "autoscaling.x-k8s.io"
	Version  = "v1"
	Resource = "provisioningrequests"
	Kind     = "ProvisioningRequest"
)

// GroupVersionResource of ProvisioningRequests.
func GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}
}

// The provisioning classes served.
const (
	// ClassCheckCapacity: does the cluster as it is have room for every
	// pod? No node is added.
	ClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ClassBestEffortAtomicScaleUp: room for every pod, on existing nodes
	// or on nodes added in one scale-up; all or nothing.
	ClassBestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
	// ClassQueuedProvisioning: GKE's queued capacity (the Dynamic Workload
	// Scheduler's flex-start): all the request's nodes at once, from a
	// group with queued provisioning, when the cloud has them.
	ClassQueuedProvisioning = "queued-provisioning.gke.io"
)

// Annotations a pod carries to say it consumes a request: such pods never
// trigger a scale-up of their own, the request brings their capacity.
// The cluster-autoscaler.kubernetes.io keys are the deprecated ones,
// still honoured upstream.
const (
	AnnotationConsume           = "autoscaling.x-k8s.io/consume-provisioning-request"
	AnnotationClass             = "autoscaling.x-k8s.io/provisioning-class-name"
	AnnotationConsumeDeprecated = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
	AnnotationClassDeprecated   = "cluster-autoscaler.kubernetes.io/provisioning-class-name"
)

// Parameters a request may set (spec.parameters).
const (
	// ParamNoRetry "true": a check-capacity request that finds no room
	// fails (Failed=True) instead of being tried again later.
	ParamNoRetry = "noRetry"
	// ParamProcessorInstance names the autoscaler instance that serves a
	// check-capacity request (--check-capacity-processor-instance).
	ParamProcessorInstance = "processorInstance"
)

// ProvisioningRequest asks for capacity for a group of pods at once.
type ProvisioningRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitempty"`
}

// Spec is what is asked for; immutable once created.
type Spec struct {
	// PodSets are the groups of pods, each from a PodTemplate in the
	// request's namespace.
	PodSets []PodSet `json:"podSets"`
	// ProvisioningClassName is the class (ClassCheckCapacity,
	// ClassBestEffortAtomicScaleUp or one this autoscaler does not serve).
	ProvisioningClassName string `json:"provisioningClassName"`
	// Parameters the class reads.
	Parameters map[string]string `json:"parameters,omitempty"`
}

// PodSet is Count pods shaped like the referenced PodTemplate.
type PodSet struct {
	PodTemplateRef Reference `json:"podTemplateRef"`
	Count          int32     `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	Name string `json:"name,omitempty"`
}

// Status is what the autoscaler found and did.
type Status struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningClassDetails carries values a class passes to users.
	ProvisioningClassDetails map[string]string `json:"provisioningClassDetails,omitempty"`
}

// Key is "namespace/name".
func (r *ProvisioningRequest) Key() string { return r.Namespace + "/" + r.Name }

// PodCount is how many pods the request stands for.
func (r *ProvisioningRequest) PodCount() int {
	n := 0
	for _, ps := range r.Spec.PodSets {
		n += int(ps.Count)
	}
	return n
}

// DeepCopy copies the request.
func (r *ProvisioningRequest) DeepCopy() *ProvisioningRequest {
	if r == nil {
		return nil
	}
	out := *r
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.PodSets = append([]PodSet(nil), r.Spec.PodSets...)
	out.Spec.Parameters = copyMap(r.Spec.Parameters)
	out.Status.ProvisioningClassDetails = copyMap(r.Status.ProvisioningClassDetails)
	out.Status.Conditions = make([]metav1.Condition, len(r.Status.Conditions))
	for i := range r.Status.Conditions {
		r.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
	}
	if r.Status.Conditions == nil {
		out.Status.Conditions = nil
	}
	return &out
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

// CRD is the CustomResourceDefinition of ProvisioningRequests (YAML), the
// same file the chart installs from its crds/ folder.
//
//go:embed crd.yaml
var CRD []byte
