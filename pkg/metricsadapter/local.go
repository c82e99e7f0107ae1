package metricsadapter

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ServiceName is the Service the APIServices point at.
const ServiceName = "gpuscale-metrics-adapter"

// APIGroupVersions returns the group versions the adapter serves, in the
// order LocalAPIServices returns them.
func APIGroupVersions() []schema.GroupVersion {
	return []schema.GroupVersion{
		{Group: "custom.metrics.k8s.io", Version: "v1beta1"},
		{Group: "custom.metrics.k8s.io", Version: "v1beta2"},
		{Group: "external.metrics.k8s.io", Version: "v1beta1"},
	}
}

var (
	serviceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// LocalAPIServices returns the objects that route the metrics APIs to an
// adapter running outside the cluster on this machine, listening on port:
// a Service of type ExternalName "localhost" in namespace (the API server's
// endpoint validation refuses loopback addresses; this route it accepts),
// then one APIService per served group version, skipping TLS verification
// of the adapter's self-signed certificate. Apply the Service first.
func LocalAPIServices(namespace string, port int) []*unstructured.Unstructured {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": ServiceName, "namespace": namespace},
		"spec": map[string]any{
			"type":         "ExternalName",
			"externalName": "localhost",
			"ports":        []any{map[string]any{"name": "https", "port": int64(port), "protocol": "TCP"}},
		},
	}}
	out := []*unstructured.Unstructured{svc}
	for _, gv := range APIGroupVersions() {
		out = append(out, apiService(gv, namespace, port))
	}
	return out
}

func apiService(gv schema.GroupVersion, namespace string, port int) *unstructured.Unstructured {
	priority := int64(100)
	if gv.Version == "v1beta2" {
		priority = 200 // preferred over v1beta1
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": gv.Version + "." + gv.Group},
		"spec": map[string]any{
			"group":                 gv.Group,
			"version":               gv.Version,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       priority,
			"insecureSkipTLSVerify": true,
			"service": map[string]any{
				"name":      ServiceName,
				"namespace": namespace,
				"port":      int64(port),
			},
		},
	}}
}

// RegisterLocal creates or updates LocalAPIServices(namespace, port)
// through client. The namespace must exist.
func RegisterLocal(ctx context.Context, client dynamic.Interface, namespace string, port int) error {
	for _, obj := range LocalAPIServices(namespace, port) {
		var res dynamic.ResourceInterface = client.Resource(apiServiceGVR)
		if obj.GetKind() == "Service" {
			res = client.Resource(serviceGVR).Namespace(namespace)
		}
		if err := createOrUpdate(ctx, res, obj); err != nil {
			return fmt.Errorf("registering %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

func createOrUpdate(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj = obj.DeepCopy()
	obj.SetResourceVersion(current.GetResourceVersion())
	if obj.GetKind() == "Service" {
		// The API server allocates nothing for ExternalName services, but
		// keep whatever it set on the spec we do not manage.
		if ip, ok, _ := unstructured.NestedString(current.Object, "spec", "clusterIP"); ok && ip != "" {
			_ = unstructured.SetNestedField(obj.Object, ip, "spec", "clusterIP")
		}
	}
	_, err = res.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
