package snapshot

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource is a set of resource amounts in the units kube-scheduler compares:
// millicores for cpu, bytes for memory and ephemeral storage, whole units for
// every scalar (extended, hugepages, prefixed native, attachable volumes).
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPods is the node's pod capacity; it is zero on requests.
	AllowedPods int64
	// Scalar holds nvidia.com/gpu, MIG profiles and every other scalar resource.
	Scalar map[v1.ResourceName]int64
}

// ResourceFromList converts a ResourceList the way kube-scheduler does:
// cpu rounds up to millicores, everything else rounds up to whole units, and
// names that are not scalar resources (unprefixed unknown names) are dropped.
func ResourceFromList(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds every amount in rl to r.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		r.addQuantity(name, q, 1)
	}
}

func (r *Resource) addQuantity(name v1.ResourceName, q resource.Quantity, sign int64) {
	switch name {
	case v1.ResourceCPU:
		r.MilliCPU += sign * q.MilliValue()
	case v1.ResourceMemory:
		r.Memory += sign * q.Value()
	case v1.ResourceEphemeralStorage:
		r.EphemeralStorage += sign * q.Value()
	case v1.ResourcePods:
		r.AllowedPods += sign * q.Value()
	default:
		if IsScalarResourceName(name) {
			if r.Scalar == nil {
				r.Scalar = make(map[v1.ResourceName]int64, 2)
			}
			r.Scalar[name] += sign * q.Value()
		}
	}
}

// AddResource adds other to r (sign 1) or subtracts it (sign -1).
func (r *Resource) AddResource(other *Resource, sign int64) {
	r.MilliCPU += sign * other.MilliCPU
	r.Memory += sign * other.Memory
	r.EphemeralStorage += sign * other.EphemeralStorage
	r.AllowedPods += sign * other.AllowedPods
	if len(other.Scalar) == 0 {
		return
	}
	if r.Scalar == nil {
		r.Scalar = make(map[v1.ResourceName]int64, len(other.Scalar))
	}
	for name, v := range other.Scalar {
		r.Scalar[name] += sign * v
	}
}

// Get returns the amount of one resource in the units of Resource.
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.AllowedPods
	default:
		return r.Scalar[name]
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	out := r
	if r.Scalar != nil {
		out.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			out.Scalar[k] = v
		}
	}
	return out
}

// IsScalarResourceName reports whether kube-scheduler tracks name as a scalar:
// extended resources (nvidia.com/gpu, nvidia.com/mig-1g.10gb), hugepages-*,
// names under kubernetes.io/ and attachable-volumes-*.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return isExtendedResourceName(s) ||
		strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// isExtendedResourceName: a domain-prefixed name outside kubernetes.io/ that
// is a valid qualified name once "requests." is put in front of it.
func isExtendedResourceName(s string) bool {
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// FormatAmount renders an amount of the named resource for people: cpu as a
// quantity in cores or millicores, memory and storage in binary units.
func FormatAmount(name v1.ResourceName, v int64) string {
	switch {
	case name == v1.ResourceCPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	case name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage ||
		strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix):
		return resource.NewQuantity(v, resource.BinarySI).String()
	default:
		return resource.NewQuantity(v, resource.DecimalSI).String()
	}
}
