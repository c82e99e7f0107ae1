package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

// joinErrors is errors.Join, nil for none.
func joinErrors(errs []error) error { return errors.Join(errs...) }

// addTaint puts a taint on a node (replacing one with the same key), with
// conflict retries; it is a no-op when the taint is there.
func addTaint(ctx context.Context, c kubernetes.Interface, node string, taint v1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i, t := range n.Spec.Taints {
			if t.Key == taint.Key {
				if t.Effect == taint.Effect {
					return nil
				}
				n.Spec.Taints = append(n.Spec.Taints[:i], n.Spec.Taints[i+1:]...)
				break
			}
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// removeTaint takes every taint with key off a node; a node that is gone
// needs nothing.
func removeTaint(ctx context.Context, c kubernetes.Interface, node, key string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = kept
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func toBeDeletedTaint(now time.Time) v1.Taint {
	return v1.Taint{Key: scaledown.TaintToBeDeleted, Value: strconv.FormatInt(now.Unix(), 10), Effect: v1.TaintEffectNoSchedule}
}

func deletionCandidateTaint(now time.Time) v1.Taint {
	return v1.Taint{Key: scaledown.TaintDeletionCandidate, Value: strconv.FormatInt(now.Unix(), 10), Effect: v1.TaintEffectPreferNoSchedule}
}

// cleanStaleTaints removes, at start-up, the taints a previous run left on
// nodes it did not finish removing: a crash mid-drain must not leave nodes
// cordoned for ever. Only nodes of this instance's node groups are
// touched: another instance (a shard managing other groups) may be
// draining the rest.
func (c *Controller) cleanStaleTaints(ctx context.Context) (int, error) {
	if err := c.cp.Refresh(ctx); err != nil {
		return 0, fmt.Errorf("cloud provider %s: refresh: %w", c.cp.Name(), err)
	}
	ours := map[string]bool{}
	for _, g := range c.cp.NodeGroups() {
		ours[g.ID] = true
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing nodes to clean stale taints: %w", err)
	}
	cleaned := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !hasTaint(n, scaledown.TaintToBeDeleted) && !hasTaint(n, scaledown.TaintDeletionCandidate) &&
			!hasTaint(n, autoscaler.TaintConsolidating) {
			continue
		}
		if g, err := c.cp.NodeGroupForNode(n); err != nil || !ours[g] {
			continue
		}
		for _, key := range []string{scaledown.TaintToBeDeleted, scaledown.TaintDeletionCandidate, autoscaler.TaintConsolidating} {
			if hasTaint(n, key) {
				if err := removeTaint(ctx, c.client, n.Name, key); err != nil {
					return cleaned, fmt.Errorf("node %s: removing stale taint %s: %w", n.Name, key, err)
				}
				cleaned++
			}
		}
	}
	return cleaned, nil
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
