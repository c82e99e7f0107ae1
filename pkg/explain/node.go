package explain

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Event reasons the autoscaler gives nodes.
const (
	ReasonScaleDown       = "ScaleDown"
	ReasonScaleDownFailed = "ScaleDownFailed"
)

// blockedMessage is how the drain rules word a blocking pod: "pod NS/NAME
// why (Code)" or "pod NS/NAME: why (Code)".
var blockedMessage = regexp.MustCompile(`^pod (\S+?):? (.*) \((\w+)\)$`)

// blockCodes are the drain rules' codes that keep a node for a pod.
var blockCodes = map[drain.Code]bool{
	drain.CodeNotReplicated: true, drain.CodeCustomController: true, drain.CodeSystemPod: true,
	drain.CodeNotSafeToEvict: true, drain.CodeLocalStorage: true, drain.CodeNotEnoughPDB: true, drain.CodeInvalidPDB: true,
}

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
	for _, k := range st.KeptNodes {
		if k.Node != name {
			continue
		}
		r.Verdict = "is not removed"
		if m := blockedMessage.FindStringSubmatch(k.Reason); m != nil && blockCodes[drain.Code(m[3])] {
			r.Verdict = "is not removed: pod " + m[1] + " cannot be moved (" + m[3] + ")"
			r.add("blocking pod: %s", m[1])
			r.add("rule: %s", m[3])
			r.add("why: %s", strings.TrimSuffix(k.Reason, " ("+m[3]+")"))
		} else {
			r.add("%s", k.Reason)
		}
		break
	}
	if r.Verdict == "" {
		r.Verdict = "is not listed as kept in the last loop"
		r.add("it is either about to be removed or outside the node groups the autoscaler manages")
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
