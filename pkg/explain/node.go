package explain

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Event reasons the autoscaler gives nodes.
const (
	ReasonScaleDown       = "ScaleDown"
	ReasonScaleDownFailed = "ScaleDownFailed"
)

// Node explains why a node is or is not being removed.
func (e *Explainer) Node(ctx context.Context, name string) (Report, error) {
	r := Report{Object: "node " + name}
	node, err := e.o.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Report{}, notFound("node", name, err)
	}
	events, err := e.events(ctx, "", "Node", name)
	if err != nil {
		return Report{}, err
	}
	if at, ok := taintTime(node, scaledown.TaintToBeDeleted); ok {
		r.Verdict = "is being removed"
		r.add("tainted %s %s", scaledown.TaintToBeDeleted, e.ago(at))
		if ev := latest(events, ReasonScaleDown); ev != nil {
			r.add("%s", ev.Message)
		}
		return r, nil
	}
	st, err := e.status(ctx)
	if err != nil {
		return Report{}, err
	}
	if n, ok := st.FindNode(name); ok {
		switch {
		case n.State == status.NodeRemoving:
			r.Verdict = "is being removed"
		case n.State == status.NodeUnneeded:
			r.Verdict = "is unneeded and waits: " + n.Message
		case n.Pod != nil && n.Reason == string(scaledown.ReasonBlockedByPod):
			r.Verdict = "is not removed: pod " + n.Pod.String() + " cannot be moved (" + n.DrainRule + ")"
			r.add("blocking pod: %s", n.Pod.String())
			r.add("rule: %s", n.DrainRule)
			r.add("why: %s", n.Message)
		case n.Pod != nil && n.Reason == string(scaledown.ReasonNoPlaceToMovePods):
			r.Verdict = "is not removed: pod " + n.Pod.String() + " fits on no other node"
			r.add("%s", n.Message)
		default:
			r.Verdict = "is not removed"
			r.add("%s (%s)", n.Message, n.Reason)
		}
	} else {
		r.Verdict = "is not listed in the last loop's status"
		switch {
		case st.Omitted != nil && st.Omitted.Nodes > 0:
			r.add("the status left out %d node(s) to stay under the ConfigMap size; kept nodes by reason: %s", st.Omitted.Nodes, reasonCounts(st.NodeReasons))
		default:
			r.add("it is either about to be removed or outside the node groups the autoscaler manages")
		}
	}
	if at, ok := taintTime(node, scaledown.TaintDeletionCandidate); ok {
		r.add("unneeded since %s (%s): marked %s", at.UTC().Format(time.RFC3339), e.ago(at), scaledown.TaintDeletionCandidate)
	}
	if ev := latest(events, ReasonScaleDownFailed); ev != nil {
		r.add("an earlier removal failed %s: %s", e.ago(eventTime(*ev)), ev.Message)
	}
	r.add("(status written %s)", e.statusAge(st))
	return r, nil
}

// taintTime reads the Unix time the autoscaler stores in its taints.
func taintTime(node *v1.Node, key string) (time.Time, bool) {
	for _, t := range node.Spec.Taints {
		if t.Key != key {
			continue
		}
		if sec, err := strconv.ParseInt(t.Value, 10, 64); err == nil {
			return time.Unix(sec, 0), true
		}
		return time.Time{}, true
	}
	return time.Time{}, false
}

// reasonCounts writes "NotUnderutilized 4000, BlockedByPod 3".
func reasonCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
