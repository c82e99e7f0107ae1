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
	// AnnotationQueued holds the queued requests, as a JSON list of
	// QueuedRecord.
	AnnotationQueued = "gpuscale.dev/kwok-queued"
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

// storedState is everything the ConfigMap holds.
type storedState struct {
	Pending []PendingNode
	Queued  []QueuedRecord
}

// decodeState reads both annotations. A malformed one is refused rather
// than taken for empty: forgetting entries would shrink targets the
// autoscaler is counting on, or ask the cloud's queue twice.
func (s *stateStore) decodeState(cm *v1.ConfigMap) (storedState, error) {
	var st storedState
	for _, a := range []struct {
		key string
		dst any
	}{{AnnotationPending, &st.Pending}, {AnnotationQueued, &st.Queued}} {
		key, dst := a.key, a.dst
		text := cm.Annotations[key]
		if text == "" {
			continue
		}
		if err := json.Unmarshal([]byte(text), dst); err != nil {
			return storedState{}, fmt.Errorf("kwok state: ConfigMap %s/%s annotation %s: %w", s.namespace, StateConfigMapName, key, err)
		}
	}
	sortPending(st.Pending)
	sortQueued(st.Queued)
	return st, nil
}

// loadState returns what the ConfigMap holds; nothing when it is missing.
func (s *stateStore) loadState(ctx context.Context) (storedState, error) {
	cm, err := s.configMaps().Get(ctx, StateConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return storedState{}, nil
	}
	if err != nil {
		return storedState{}, fmt.Errorf("kwok state: ConfigMap %s/%s: %w", s.namespace, StateConfigMapName, err)
	}
	return s.decodeState(cm)
}

// update applies change to the stored list and writes the result, retrying
// on conflicts; change may run more than once and must only read its
// argument. An error from change is returned as is, without a write.
func (s *stateStore) update(ctx context.Context, change func([]PendingNode) ([]PendingNode, error)) ([]PendingNode, error) {
	st, err := s.updateState(ctx, func(st *storedState) error {
		next, err := change(st.Pending)
		st.Pending = next
		return err
	})
	return st.Pending, err
}

// updateState is update for both lists at once, in one write.
func (s *stateStore) updateState(ctx context.Context, change func(*storedState) error) (storedState, error) {
	var result storedState
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
		current, err := s.decodeState(cm)
		if err != nil {
			return err
		}
		next := storedState{Pending: append([]PendingNode(nil), current.Pending...), Queued: append([]QueuedRecord(nil), current.Queued...)}
		if err := change(&next); err != nil {
			return err
		}
		if next.Pending == nil {
			next.Pending = []PendingNode{}
		}
		sortPending(next.Pending)
		sortQueued(next.Queued)
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		changed := create
		for _, a := range []struct {
			key string
			v   any
		}{{AnnotationPending, next.Pending}, {AnnotationQueued, next.Queued}} {
			key, v := a.key, a.v
			if key == AnnotationQueued && len(next.Queued) == 0 && cm.Annotations[key] == "" {
				continue
			}
			text, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if cm.Annotations[key] != string(text) {
				cm.Annotations[key], changed = string(text), true
			}
		}
		if !changed {
			result = next
			return nil
		}
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
