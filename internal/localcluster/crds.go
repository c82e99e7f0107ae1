package localcluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

// crdResource is CustomResourceDefinitions' resource.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs installs the CustomResourceDefinitions gpuscale serves (the
// chart's crds/ folder: ProvisioningRequests and CapacityBuffers) and waits
// until the API server serves them.
func (c *Cluster) installCRDs(ctx context.Context, timeout time.Duration) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for _, crd := range []struct {
		kind string
		yaml []byte
	}{{"ProvisioningRequest", provisioningrequest.CRD}, {"CapacityBuffer", capacitybuffer.CRD}} {
		if err := installCRD(ctx, dyn, crd.kind, crd.yaml, timeout); err != nil {
			return err
		}
	}
	return nil
}

// installCRD creates one CRD and waits until it is established.
func installCRD(ctx context.Context, dyn dynamic.Interface, kind string, text []byte, timeout time.Duration) error {
	var obj map[string]any
	if err := yaml.Unmarshal(text, &obj); err != nil {
		return fmt.Errorf("%s CRD: %w", kind, err)
	}
	crd := &unstructured.Unstructured{Object: obj}
	res := dyn.Resource(crdResource)
	if _, err := res.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := res.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established within %s: %w", crd.GetName(), timeout, err)
	}
	return nil
}
