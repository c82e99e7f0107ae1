package capacitybuffer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured reads a buffer as the dynamic client returns it.
func FromUnstructured(u *unstructured.Unstructured) (*CapacityBuffer, error) {
	var b CapacityBuffer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return nil, fmt.Errorf("CapacityBuffer %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &b, nil
}

// ToUnstructured is the buffer as the dynamic client sends it.
func ToUnstructured(b *CapacityBuffer) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return nil, fmt.Errorf("CapacityBuffer %s: %w", b.Key(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(Group + "/" + Version)
	u.SetKind(Kind)
	return u, nil
}
