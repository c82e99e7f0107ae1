package controller

import (
	"context"
	"errors"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// AnnotationTaintOwner names, on a node, the autoscaler that put its
// scale-down taints there (ownedTaintKeys): its status ConfigMap
// (namespace/name), which is unique per shard. The start-up clean-up
// removes the taints an earlier run of the same autoscaler left, also on
// nodes whose group it no longer manages, and leaves those another shard
// owns.
const AnnotationTaintOwner = "gpuscale.dev/deletion-taint-owner"

// ownedTaintKeys are the taints the autoscaler puts on nodes it means to
// remove, and cleans at start-up.
var ownedTaintKeys = [...]string{disruption.TaintToBeDeleted, disruption.TaintDeletionCandidate, autoscaler.TaintConsolidating}

// hasOwnedTaint reports whether n carries one of ownedTaintKeys.
func hasOwnedTaint(n *v1.Node) bool {
	for _, k := range ownedTaintKeys {
		if hasTaint(n, k) {
			return true
		}
	}
	return false
}

// joinErrors is errors.Join, nil for none.
func joinErrors(errs []error) error { return errors.Join(errs...) }

// putTaint puts a taint on a node, with conflict retries. A taint with the
// same key and effect already there is kept as it is, unless claim is set:
// then one with another value is replaced, so that the node carries this
// very taint (the value untaint compares). A taint with the same key and
// another effect is always replaced. A non-empty owner is written to
// AnnotationTaintOwner in the same update, so that the start-up clean-up
// knows the taint for its own.
func putTaint(ctx context.Context, c kubernetes.Interface, node string, taint v1.Taint, owner string, claim bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i, t := range n.Spec.Taints {
			if t.Key == taint.Key {
				if t.Effect == taint.Effect && (t.Value == taint.Value || !claim) {
					return nil
				}
				n.Spec.Taints = append(n.Spec.Taints[:i], n.Spec.Taints[i+1:]...)
				break
			}
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		if owner != "" {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationTaintOwner] = owner
		}
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// removeTaint takes every taint with key off a node; a node that is gone
// needs nothing.
func removeTaint(ctx context.Context, c kubernetes.Interface, node, key string) error {
	return removeTaintIf(ctx, c, node, func(t v1.Taint) bool { return t.Key == key })
}

// removeOwnTaint takes taint off a node only if the node still carries it
// as written (same key, effect and value), with the owner annotation: a
// taint with the same key that someone else put there since (a new leader
// removing the same node) stays.
func removeOwnTaint(ctx context.Context, c kubernetes.Interface, node string, taint v1.Taint) error {
	return removeTaintIf(ctx, c, node, func(t v1.Taint) bool {
		return t.Key == taint.Key && t.Effect == taint.Effect && t.Value == taint.Value
	})
}

// removeTaintIf takes the taints that match off a node, and the owner
// annotation with them when no deletion taint is left; a node that is gone
// needs nothing.
func removeTaintIf(ctx context.Context, c kubernetes.Interface, node string, match func(v1.Taint) bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := make([]v1.Taint, 0, len(n.Spec.Taints))
		for _, t := range n.Spec.Taints {
			if !match(t) {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = kept
		if _, ok := n.Annotations[AnnotationTaintOwner]; ok && !hasOwnedTaint(n) {
			delete(n.Annotations, AnnotationTaintOwner)
		}
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func toBeDeletedTaint(now time.Time) v1.Taint {
	return v1.Taint{Key: disruption.TaintToBeDeleted, Value: strconv.FormatInt(now.Unix(), 10), Effect: v1.TaintEffectNoSchedule}
}

func deletionCandidateTaint(now time.Time) v1.Taint {
	return v1.Taint{Key: disruption.TaintDeletionCandidate, Value: strconv.FormatInt(now.Unix(), 10), Effect: v1.TaintEffectPreferNoSchedule}
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
