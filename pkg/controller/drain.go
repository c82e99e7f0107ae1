package controller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// drainOptions bound how long a drain may take.
type drainOptions struct {
	// MaxPodEvictionTime is how long to keep retrying an eviction that
	// fails: a PodDisruptionBudget refuses it (429), it conflicts (409),
	// or any other error (--max-pod-eviction-time, 2m).
	MaxPodEvictionTime time.Duration
	// MaxGracefulTermination caps each pod's grace period.
	MaxGracefulTermination time.Duration
	// RetryInterval is the pause between eviction attempts.
	RetryInterval time.Duration
}

// evictAll evicts pods through the Eviction API, retrying refusals and
// errors until MaxPodEvictionTime, then waits until they and await (pods
// already terminating) are gone from the node, up to the capped grace
// period plus drain.LongTerminatingMargin. A pod still there once it is
// long-terminating counts as gone, as in the drain rules.
func evictAll(ctx context.Context, c kubernetes.Interface, clk clock.Clock, pods, await []*v1.Pod, o drainOptions) error {
	deadline := clk.Now().Add(o.MaxPodEvictionTime)
	for _, p := range pods {
		if err := evictOne(ctx, c, clk, p, o, deadline); err != nil {
			return err
		}
	}
	waitUntil := clk.Now().Add(o.MaxGracefulTermination + drain.LongTerminatingMargin)
	for _, p := range append(pods[:len(pods):len(pods)], await...) {
		for {
			cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && goneFrom(cur, p, clk.Now())) {
				break
			}
			if clk.Now().After(waitUntil) {
				return fmt.Errorf("pod %s/%s still on node %s after %s", p.Namespace, p.Name, p.Spec.NodeName, o.MaxGracefulTermination)
			}
			if err := sleep(ctx, clk, o.RetryInterval); err != nil {
				return err
			}
		}
	}
	return nil
}

// goneFrom reports whether cur, the current state of the pod was, no
// longer holds its node: replaced, moved, finished, or terminating past
// its grace period and the margin.
func goneFrom(cur, was *v1.Pod, now time.Time) bool {
	return cur.UID != was.UID || cur.Spec.NodeName != was.Spec.NodeName ||
		cur.Status.Phase == v1.PodSucceeded || cur.Status.Phase == v1.PodFailed || drain.IsLongTerminating(cur, now)
}

func evictOne(ctx context.Context, c kubernetes.Interface, clk clock.Clock, p *v1.Pod, o drainOptions, deadline time.Time) error {
	grace := int64(o.MaxGracefulTermination.Seconds())
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g < grace {
		grace = *g
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	for {
		// Look at the pod as it is now before each attempt: the re-check
		// after tainting is older than the evictions of the pods before
		// it and the retries of this one. Gone or replaced, it needs
		// nothing; annotated since so that it may not be disrupted, it is
		// not evicted.
		gone, why := lookAgain(ctx, c, p)
		switch {
		case gone:
			return nil
		case why != "":
			return fmt.Errorf("not evicting %s/%s: %s", p.Namespace, p.Name, why)
		}
		err := c.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil // evicted, or already gone
		case apierrors.IsConflict(err):
			// 409: the UID precondition failed (the pod was replaced:
			// the next look says so), or a write inside the API server
			// conflicted, which a retry clears.
			if clk.Now().After(deadline) {
				return fmt.Errorf("evicting %s/%s: still conflicting after %s: %w", p.Namespace, p.Name, o.MaxPodEvictionTime, err)
			}
		case apierrors.IsTooManyRequests(err):
			if clk.Now().After(deadline) {
				return fmt.Errorf("evicting %s/%s: a PodDisruptionBudget still refused after %s: %w", p.Namespace, p.Name, o.MaxPodEvictionTime, err)
			}
		default:
			// Any other error (a 500 from a webhook, a timeout) is tried
			// again too, as the Cluster Autoscaler does: a drain that
			// failed at once would untaint the node and pause scale-down
			// for --scale-down-delay-after-failure over a blip.
			if clk.Now().After(deadline) {
				return fmt.Errorf("evicting %s/%s: still failing after %s: %w", p.Namespace, p.Name, o.MaxPodEvictionTime, err)
			}
		}
		if err := sleep(ctx, clk, o.RetryInterval); err != nil {
			return err
		}
	}
}

// lookAgain reads p before an eviction is tried again: gone reports that
// it is gone or another pod has its name; why, that it was annotated since
// so that it may not be disrupted. An error reading it says neither.
func lookAgain(ctx context.Context, c kubernetes.Interface, p *v1.Pod) (gone bool, why string) {
	cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && cur.UID != p.UID):
		return true, ""
	case err != nil:
		return false, ""
	case drain.DoNotDisrupt(cur.Annotations) != "":
		return false, "it is annotated " + drain.DoNotDisrupt(cur.Annotations) + "=true"
	case cur.Annotations[drain.AnnotationSafeToEvict] == "false":
		return false, "it is annotated " + drain.AnnotationSafeToEvict + "=false"
	}
	return false, ""
}

func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-clk.After(d):
		return nil
	}
}

// withClockTimeout is context.WithTimeout on clk, so that timeouts follow
// an injected clock; the context's cause says what timed out.
func withClockTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(fmt.Errorf("timed out after %s", d))
		case <-ctx.Done():
			t.Stop()
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// contextCause adds to err why ctx ended, when it did.
func contextCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("%w (%v)", err, cause)
	}
	return err
}
