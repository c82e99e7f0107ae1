package kwok

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Where pending creations are kept between restarts.
const (
	// StateConfigMapName is the ConfigMap, in the provider's namespace,
	// that holds the pending creations.
	StateConfigMapName = "gpuscale-kwok-state"
	// AnnotationPending holds them, as a JSON list of PendingNode.
	AnnotationPending = "gpuscale.dev/kwok-pending"
)

// PendingNode is a node a scale-up asked for whose Node object does not
// exist yet. Its name is chosen when it is asked for, so creating it is
// idempotent: a provider that dies between creating the Node and forgetting
// the entry finds the Node on restart and only forgets the entry.
type PendingNode struct {
	Group    string    `json:"group"`
	Name     string    `json:"name"`
	CreateAt time.Time `json:"createAt"`
	// RequestedAt is when the scale-up asked for it (zero in entries
	// written before it was kept): its instance's creation time.
	RequestedAt time.Time `json:"requestedAt"`
	// Failed: the cloud had no capacity for it (Faults.OutOfCapacity); it
	// is never created, and counts in the target until given back.
	Failed bool `json:"failed,omitempty"`
}

// sortPending orders by creation time, then name, so the state and every
// decision derived from it are deterministic.
func sortPending(p []PendingNode) {
	sort.Slice(p, func(i, j int) bool {
		if !p[i].CreateAt.Equal(p[j].CreateAt) {
			return p[i].CreateAt.Before(p[j].CreateAt)
		}
		return p[i].Name < p[j].Name
	})
}

// stateStore reads and writes the pending creations. Every write is a
// read-modify-write guarded by the ConfigMap's resourceVersion, so two
// replicas (a leader handover) can never lose each other's entries.
type stateStore struct {
	client    kubernetes.Interface
	namespace string
}

func (s *stateStore) configMaps() interface {
	Get(context.Context, string, metav1.GetOptions) (*v1.ConfigMap, error)
	Create(context.Context, *v1.ConfigMap, metav1.CreateOptions) (*v1.ConfigMap, error)
	Update(context.Context, *v1.ConfigMap, metav1.UpdateOptions) (*v1.ConfigMap, error)
} {
	return s.client.CoreV1().ConfigMaps(s.namespace)
}

// load returns the pending creations; none when the ConfigMap is missing.
func (s *stateStore) load(ctx context.Context) ([]PendingNode, error) {
	cm, err := s.configMaps().Get(ctx, StateConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kwok state: ConfigMap %s/%s: %w", s.namespace, StateConfigMapName, err)
	}
	return s.decode(cm)
}

func (s *stateStore) decode(cm *v1.ConfigMap) ([]PendingNode, error) {
	text := cm.Annotations[AnnotationPending]
	if text == "" {
		return nil, nil
	}
	var out []PendingNode
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		// Refuse rather than start from empty: forgetting entries would
		// shrink targets the autoscaler is counting on.
		return nil, fmt.Errorf("kwok state: ConfigMap %s/%s annotation %s: %w", s.namespace, StateConfigMapName, AnnotationPending, err)
	}
	sortPending(out)
	return out, nil
}

// update applies change to the stored list and writes the result, retrying
// on conflicts; change may run more than once and must only read its
// argument. An error from change is returned as is, without a write.
func (s *stateStore) update(ctx context.Context, change func([]PendingNode) ([]PendingNode, error)) ([]PendingNode, error) {
	var result []PendingNode
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := s.configMaps().Get(ctx, StateConfigMapName, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: StateConfigMapName, Namespace: s.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuscale"},
			}}
		case err != nil:
			return fmt.Errorf("kwok state: ConfigMap %s/%s: %w", s.namespace, StateConfigMapName, err)
		}
		current, err := s.decode(cm)
		if err != nil {
			return err
		}
		next, err := change(append([]PendingNode(nil), current...))
		if err != nil {
			return err
		}
		if next == nil {
			next = []PendingNode{}
		}
		sortPending(next)
		text, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		if cm.Annotations[AnnotationPending] == string(text) && !create {
			result = next
			return nil
		}
		cm.Annotations[AnnotationPending] = string(text)
		if create {
			_, err = s.configMaps().Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another replica created it first: read it again.
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, StateConfigMapName, err)
			}
		} else {
			_, err = s.configMaps().Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("kwok state: writing ConfigMap %s/%s: %w", s.namespace, StateConfigMapName, err)
		}
		result = next
		return nil
	})
	return result, err
}
