package controller

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// podCheck sorts a node's current pods, read from the API server, for the
// node's removal.
type podCheck struct {
	// evict are the pods of the plan still there that the drain rules
	// still let move.
	evict []*v1.Pod
	// await are pods already terminating, within their grace period
	// (not long-terminating): they are waited for, not evicted, so that
	// deleting the node does not cut their grace period short.
	await []*v1.Pod
	// why is set when the removal must be called off: a pod the plan did
	// not account for arrived, or a pod may no longer move.
	why string
}

// checkPods judges pods, the pods bound to node now, against the plan
// (planned holds the UIDs of the pods it evicts) with rules; since says,
// in the reason, when unplanned pods arrived. It has no I/O: dc carries
// the time and the budgets.
func checkPods(node string, pods []v1.Pod, planned map[types.UID]bool, since string, rules drain.Rules, dc *drain.Context) podCheck {
	var out podCheck
	var arrived, held []string
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Spec.NodeName != node, p.Status.Phase == v1.PodSucceeded, p.Status.Phase == v1.PodFailed:
			continue
		case p.DeletionTimestamp != nil:
			// Upstream's drain waits for these too; one terminating for
			// longer than its grace period plus a margin is taken for
			// gone (the kubelet is not coming back to it).
			if !drain.IsLongTerminating(p, dc.Now) {
				out.await = append(out.await, p)
			}
			continue
		}
		// Annotations may have changed since the plan: the owner's word
		// now is what counts.
		v := rules.Evaluate(dc, p)
		switch {
		case !planned[p.UID] && v.Outcome == drain.Skip:
			// DaemonSet, mirror and expendable pods go with the node.
		case !planned[p.UID]:
			arrived = append(arrived, p.Namespace+"/"+p.Name)
		case v.Outcome == drain.Block:
			held = append(held, v.Message)
		case v.Outcome == drain.Wait:
			held = append(held, fmt.Sprintf("pod %s/%s is annotated %s=%s and must complete first",
				p.Namespace, p.Name, drain.AnnotationSafeToEvict, p.Annotations[drain.AnnotationSafeToEvict]))
		default:
			out.evict = append(out.evict, p)
		}
	}
	var why []string
	if len(arrived) > 0 {
		why = append(why, fmt.Sprintf("pod(s) %s arrived %s", strings.Join(arrived, ", "), since))
	}
	out.why = strings.Join(append(why, held...), "; ")
	return out
}

// recheckRules are the drain rules that re-judge a node's pods after
// tainting: the planner's, less those that count across the cluster (the
// PodDisruptionBudget allowance, which the Eviction API enforces itself,
// and --min-replica-count), which the plan already weighed.
func recheckRules(rs drain.Rules) drain.Rules {
	out := make(drain.Rules, 0, len(rs))
	for _, r := range rs {
		switch r.(type) {
		case drain.RulePodDisruptionBudget, drain.RuleMinReplicaCount:
		default:
			out = append(out, r)
		}
	}
	return out
}

// rules returns the rules the removals were planned with: scale-down and
// consolidation judge pods with the same ones (do-not-disrupt included).
func (a *liveActuator) rules() drain.Rules {
	return recheckRules(drain.Default(a.drainOptions))
}

// podsOn reads a node's pods from the API server (the informer cache may
// lag) and judges them; planned are the UIDs the plan evicts.
func (a *liveActuator) podsOn(ctx context.Context, rm disruption.Removal, planned map[types.UID]bool, since string) (podCheck, error) {
	list, err := a.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", rm.Node).String()})
	if err != nil {
		return podCheck{}, err
	}
	dc := &drain.Context{Now: a.clock.Now()}
	if a.pdbs != nil {
		pdbs, err := a.pdbs.List(labels.Everything())
		if err != nil {
			return podCheck{}, err
		}
		dc.Budgets = drain.NewBudgets(pdbs)
	}
	return checkPods(rm.Node, list.Items, planned, since, a.rules(), dc), nil
}

// recheck reads the node's pods after tainting and compares them with the
// plan.
func (a *liveActuator) recheck(ctx context.Context, rm disruption.Removal) (podCheck, error) {
	planned := map[types.UID]bool{}
	for _, m := range rm.Evict {
		planned[m.Pod.UID] = true
	}
	for _, p := range rm.DaemonSetPods {
		planned[p.UID] = true
	}
	return a.podsOn(ctx, rm, planned, "after the plan")
}

// lastLook reads the node's pods once more after the drain, before the
// node is deleted: a pod bound by nodeName (which ignores taints) after
// the re-check must not go with the node unevicted, nor a pod deleted
// since be cut short. It says why the node must stay, "" when it may go.
func (a *liveActuator) lastLook(ctx context.Context, rm disruption.Removal) (string, error) {
	c, err := a.podsOn(ctx, rm, nil, "during the drain")
	if err != nil {
		return "", err
	}
	var why []string
	if c.why != "" {
		why = append(why, c.why)
	}
	if len(c.await) > 0 {
		names := make([]string, len(c.await))
		for i, p := range c.await {
			names[i] = p.Namespace + "/" + p.Name
		}
		why = append(why, fmt.Sprintf("pod(s) %s arrived during the drain and are terminating", strings.Join(names, ", ")))
	}
	return strings.Join(why, "; "), nil
}
