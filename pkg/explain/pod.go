package explain

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// Event reasons the autoscaler gives pods.
const (
	ReasonTriggeredScaleUp  = "TriggeredScaleUp"
	ReasonNotTriggerScaleUp = "NotTriggerScaleUp"
)

// Pod explains whether a pod triggered a scale-up, and if not, why not for
// each node group. arg is NAMESPACE/NAME (or NAME in "default").
func (e *Explainer) Pod(ctx context.Context, arg string) (Report, error) {
	ns, name, err := splitName(arg)
	if err != nil {
		return Report{}, err
	}
	key := ns + "/" + name
	r := Report{Object: "pod " + key}
	pod, err := e.o.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Report{}, notFound("pod", key, err)
	}
	events, err := e.events(ctx, ns, "Pod", name)
	if err != nil {
		return Report{}, err
	}
	last := latest(events, ReasonTriggeredScaleUp, ReasonNotTriggerScaleUp)
	if pod.Spec.NodeName != "" {
		r.Verdict = "is scheduled on node " + pod.Spec.NodeName + "; it needs no scale-up"
		if last != nil && last.Reason == ReasonTriggeredScaleUp {
			r.add("while pending it triggered a scale-up (%s): %s", e.ago(eventTime(*last)), last.Message)
		}
		return r, nil
	}
	if pod.DeletionTimestamp != nil {
		r.Verdict = "is being deleted; the autoscaler ignores it"
		return r, nil
	}
	st, err := e.status(ctx)
	if err != nil {
		return Report{}, err
	}
	sched := unschedulableMessage(pod)
	if sched != "" {
		r.add("kube-scheduler: %s", sched)
	}
	if reasons, ok := pendingReasons(st, key); ok {
		r.Verdict = "did not trigger a scale-up"
		for _, line := range reasons {
			r.add("%s", line)
		}
		r.add("(status written %s)", e.statusAge(st))
		return r, nil
	}
	if last != nil && last.Reason == ReasonTriggeredScaleUp {
		r.Verdict = "triggered a scale-up and waits for the new node"
		r.add("%s (%s)", last.Message, e.ago(eventTime(*last)))
		for _, g := range st.NodeGroups {
			switch {
			case g.ScaleUp.BackoffInfo != nil:
				r.add("node group %s: scale-up %s: %s", g.Name, g.ScaleUp.Status, g.ScaleUp.BackoffInfo.ErrorMessage)
			case g.ScaleUp.Status != status.ActivityNone:
				r.add("node group %s: scale-up %s", g.Name, g.ScaleUp.Status)
			}
		}
		return r, nil
	}
	switch {
	case sched == "":
		r.Verdict = "is not marked unschedulable by kube-scheduler yet; the autoscaler acts only on unschedulable pods"
	case last != nil:
		r.Verdict = "did not trigger a scale-up when last considered"
		r.add("%s (%s)", last.Message, e.ago(eventTime(*last)))
	default:
		r.Verdict = "has not been considered by the autoscaler yet"
	}
	r.add("the status written %s does not list it", e.statusAge(st))
	return r, nil
}

// pendingReasons finds the pod in the status: one line per node group.
func pendingReasons(st *status.Document, key string) ([]string, bool) {
	p, ok := st.FindPending(key)
	if !ok {
		return nil, false
	}
	lines := make([]string, 0, len(p.Reasons)+1)
	for _, r := range p.Reasons {
		if r.Group == "" {
			lines = append(lines, r.Message)
		} else {
			lines = append(lines, "node group "+r.Group+": "+r.Message)
		}
	}
	if p.Count > 1 {
		lines = append(lines, fmt.Sprintf("the same holds for %d equivalent pod(s): %s", p.Count-1, strings.Join(others(p.Pods, key), ", ")))
	}
	return lines, true
}

func others(all []string, key string) []string {
	out := make([]string, 0, len(all)-1)
	for _, p := range all {
		if p != key {
			out = append(out, p)
		}
	}
	const show = 5
	if len(out) > show {
		return append(out[:show], "...")
	}
	return out
}

// unschedulableMessage is kube-scheduler's message when it could not place
// the pod, or "".
func unschedulableMessage(pod *v1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			if c.Message == "" {
				return "unschedulable"
			}
			return c.Message
		}
	}
	return ""
}
