package controller

import (
	"context"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// retryInterval is the pause between eviction attempts and pod checks.
const retryInterval = 2 * time.Second

// annotationLastUpdated is the annotation upstream stamps on the status
// ConfigMap.
const annotationLastUpdated = "cluster-autoscaler.kubernetes.io/last-updated"

// writeStatus creates or updates the status ConfigMap with the document
// d and its text, and extra keys beside them (a shard's claims).
func writeStatus(ctx context.Context, c kubernetes.Interface, namespace, name string, d *status.Document, text string, extra map[string]string) error {
	cms := c.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		cm.Data = map[string]string{status.Key: text}
		maps.Copy(cm.Data, extra)
		cm.Annotations = map[string]string{annotationLastUpdated: d.Time}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Data[status.Key] = text
	maps.Copy(cm.Data, extra)
	cm.Annotations[annotationLastUpdated] = d.Time
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
