package demo

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
)

// registerAdapter routes the metrics APIs to the adapter listening on
// localhost:port (metricsadapter.RegisterLocal: an ExternalName Service
// "localhost" and one APIService per group version), in the guide's
// monitoring namespace.
func registerAdapter(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, port int) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adapterNS}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("demo: namespace %s: %w", adapterNS, err)
	}
	if err := metricsadapter.RegisterLocal(ctx, dyn, adapterNS, port); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
