package provisioningrequest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured reads a request as the dynamic client returns it.
func FromUnstructured(u *unstructured.Unstructured) (*ProvisioningRequest, error) {
	var r ProvisioningRequest
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return nil, fmt.Errorf("ProvisioningRequest %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &r, nil
}

// ToUnstructured is the request as the dynamic client sends it.
func ToUnstructured(r *ProvisioningRequest) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		return nil, fmt.Errorf("ProvisioningRequest %s: %w", r.Key(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(Group + "/" + Version)
	u.SetKind(Kind)
	return u, nil
}
