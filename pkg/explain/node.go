package explain

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Node states in NodeAnswer.State beyond the status's own (Removing,
// Unneeded, Kept).
const (
	// NodeNotListed: the node exists but the last status does not list it.
	NodeNotListed = "NotListed"
	// NodeRemoved: the node is gone and the autoscaler's events say it
	// removed it.
	NodeRemoved = "Removed"
	// NodeGone: the node is gone; the events record a removal that was
	// started but not how it ended, or no removal at all.
	NodeGone = "Gone"
)

// NodeAnswer is why a node stays, or why a node that is gone was removed.
type NodeAnswer struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	// State is Removing, Unneeded or Kept (from the status), or one of
	// NotListed, Removed, Gone.
	State string `json:"state"`
	Group string `json:"group,omitempty"`
	// Reason is the status's stable code for a kept node; Message says
	// it for people; Pod and DrainRule name the pod that keeps it.
	Reason    string      `json:"reason,omitempty"`
	Message   string      `json:"message,omitempty"`
	Pod       *status.Ref `json:"pod,omitempty"`
	DrainRule string      `json:"drainRule,omitempty"`
	// Buffers are the CapacityBuffers (namespace/name) whose placeholder
	// pods hold room on the node.
	Buffers []string `json:"buffers,omitempty"`
	// UnneededSince is when the node carried the deletion-candidate taint
	// from; RemovingSince when it was tainted for removal.
	UnneededSince *time.Time `json:"unneededSince,omitempty"`
	RemovingSince *time.Time `json:"removingSince,omitempty"`
	// KeptByReason counts the nodes the status keeps, by reason, when it
	// left this one out to stay under the ConfigMap size.
	KeptByReason map[string]int `json:"keptByReason,omitempty"`
	// Removal is what the events say of the autoscaler removing it.
	Removal *Removal `json:"removal,omitempty"`
	// Failures are earlier removals that failed or were called off.
	Failures []EventRecord `json:"failures,omitempty"`
	Status   *StatusInfo   `json:"status,omitempty"`
}

// Removal is a removal of a node as the autoscaler's events record it.
type Removal struct {
	// Reason is a status.Removal* value: empty, underutilized, unready,
	// consolidation, unregistered.
	Reason    string `json:"reason,omitempty"`
	NodeGroup string `json:"nodeGroup,omitempty"`
	// Started is the node's ScaleDown event (taint and drain began);
	// Completed the status ConfigMap's ScaleDown, ScaleDownEmpty or
	// DeleteUnregistered event naming the node.
	Started   *EventRecord `json:"started,omitempty"`
	Completed *EventRecord `json:"completed,omitempty"`
}

// Node explains why a node is or is not being removed, or, for a node
// that is gone, why and when the autoscaler removed it.
func (e *Explainer) Node(ctx context.Context, name string) (Report, error) {
	node, err := e.o.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return e.goneNode(ctx, name)
	}
	if err != nil {
		return Report{}, notFound("node", name, err)
	}
	events, err := e.events(ctx, eventQuery{kind: "Node", name: name})
	if err != nil {
		return Report{}, err
	}
	a := &NodeAnswer{Name: name, Exists: true}
	for _, ev := range events {
		if ev.Reason == status.EventScaleDownFailed || ev.Reason == status.EventScaleDownAborted {
			a.Failures = append(a.Failures, record(ev))
		}
	}
	if at, ok := taintTime(node, disruption.TaintDeletionCandidate); ok {
		a.UnneededSince = &at
	}
	if at, ok := taintTime(node, disruption.TaintToBeDeleted); ok {
		a.State, a.RemovingSince = status.NodeRemoving, &at
		ev := latest(events, status.EventScaleDown)
		if in := latest(events, status.EventInterrupted); in != nil && (ev == nil || in.LastTimestamp.After(ev.LastTimestamp.Time)) {
			ev = in // the cloud is taking it away
		}
		if ev != nil {
			rec := record(*ev)
			a.Removal = &Removal{Reason: rec.RemovalReason, NodeGroup: rec.NodeGroup, Started: &rec}
		}
	} else {
		st, err := e.status(ctx)
		if err != nil {
			return Report{}, err
		}
		info := e.statusInfo(st)
		a.Status = &info
		fromStatus(a, st)
	}
	r := Report{Kind: KindNode, Object: "node " + name, Node: a}
	e.nodeText(&r, a)
	return r, nil
}

// fromStatus fills the answer from the node's status entry.
func fromStatus(a *NodeAnswer, st *status.Document) {
	n, ok := st.FindNode(a.Name)
	if !ok {
		a.State = NodeNotListed
		if st.Omitted != nil && st.Omitted.Nodes > 0 {
			a.KeptByReason = st.NodeReasons
		}
		return
	}
	a.State, a.Group, a.Reason, a.Message, a.Pod, a.DrainRule = n.State, n.Group, n.Reason, n.Message, n.Pod, n.DrainRule
	a.Buffers = n.Buffers
	if a.UnneededSince == nil && !n.UnneededSince.IsZero() {
		at := n.UnneededSince
		a.UnneededSince = &at
	}
}

func (e *Explainer) nodeText(r *Report, a *NodeAnswer) {
	switch {
	case a.State == status.NodeRemoving:
		r.Verdict = "is being removed"
		if a.RemovingSince != nil {
			r.add("tainted %s %s", disruption.TaintToBeDeleted, e.ago(*a.RemovingSince))
		}
		if a.Removal != nil && a.Removal.Started != nil {
			r.add("%s", a.Removal.Started.Message)
		}
	case a.State == status.NodeUnneeded:
		r.Verdict = "is unneeded and waits: " + a.Message
	case a.Pod != nil && a.DrainRule != "": // a drain rule keeps the pod: BlockedByPod
		r.Verdict = "is not removed: pod " + a.Pod.String() + " cannot be moved (" + a.DrainRule + ")"
		r.add("blocking pod: %s", a.Pod.String())
		r.add("rule: %s", a.DrainRule)
		r.add("why: %s", a.Message)
	case a.Pod != nil: // a pod that must move fits nowhere: NoPlaceToMovePods
		r.Verdict = "is not removed: pod " + a.Pod.String() + " fits on no other node"
		r.add("%s", a.Message)
	case a.State == status.NodeKept:
		r.Verdict = "is not removed"
		r.add("%s (%s)", a.Message, a.Reason)
	case a.State == NodeNotListed:
		r.Verdict = "is not listed in the last loop's status"
		if a.KeptByReason != nil {
			r.add("the status left out some nodes to stay under the ConfigMap size; kept nodes by reason: %s", reasonCounts(a.KeptByReason))
		} else {
			r.add("it is either about to be removed or outside the node groups the autoscaler manages")
		}
	}
	nodeBufferText(r, a)
	if a.UnneededSince != nil && a.State != status.NodeRemoving {
		r.add("unneeded since %s (%s): marked %s", a.UnneededSince.UTC().Format(time.RFC3339), e.ago(*a.UnneededSince), disruption.TaintDeletionCandidate)
	}
	if len(a.Failures) > 0 {
		f := a.Failures[0]
		r.add("an earlier removal %s %s: %s", failedOrCalledOff(f.Reason), e.ago(f.Time), f.Message)
	}
	if a.Status != nil {
		r.add("(status written %s)", e.statusTimeText(a.Status.Time))
	}
}

func failedOrCalledOff(reason string) string {
	if reason == status.EventScaleDownAborted {
		return "was called off"
	}
	return "failed"
}

// taintTime reads the Unix time the autoscaler stores in its taints.
func taintTime(node *v1.Node, key string) (time.Time, bool) {
	for _, t := range node.Spec.Taints {
		if t.Key != key {
			continue
		}
		if sec, err := strconv.ParseInt(t.Value, 10, 64); err == nil {
			return time.Unix(sec, 0).UTC(), true
		}
		return time.Time{}, true
	}
	return time.Time{}, false
}

// reasonCounts writes "BlockedByPod 3, NotUnderutilized 4000".
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
