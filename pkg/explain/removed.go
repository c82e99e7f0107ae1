package explain

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// goneNode explains a node that no longer exists from the events the
// autoscaler wrote: the node's own (ScaleDown when its drain began,
// failures) and the status ConfigMap's that name it (the removal done, an
// unregistered instance deleted). Events live for the API server's
// --event-ttl (1h by default); past that there is no record.
func (e *Explainer) goneNode(ctx context.Context, name string) (Report, error) {
	own, err := e.events(ctx, eventQuery{kind: "Node", name: name})
	if err != nil {
		return Report{}, err
	}
	cm, err := e.statusEvents(ctx, status.EventScaleDown, status.EventScaleDownEmpty, status.EventDeleteUnregistered)
	if err != nil {
		return Report{}, err
	}
	var done *v1.Event
	for i := range cm {
		if namesNode(cm[i], name) {
			done = &cm[i]
			break
		}
	}
	if len(own) == 0 && done == nil {
		return Report{}, fmt.Errorf("node %s not found, and no event of the autoscaler names it: it was removed longer ago than the API server keeps events (--event-ttl, 1h by default), removed by something else, or never existed", name)
	}
	a := &NodeAnswer{Name: name, State: NodeGone}
	rm := &Removal{}
	if ev := latest(own, status.EventScaleDown); ev != nil {
		rec := record(*ev)
		rm.Started, rm.Reason, rm.NodeGroup = &rec, rec.RemovalReason, rec.NodeGroup
	}
	if done != nil {
		rec := record(*done)
		rm.Completed = &rec
		a.State = NodeRemoved
		if rec.RemovalReason != "" {
			rm.Reason = rec.RemovalReason
		}
		if rec.NodeGroup != "" {
			rm.NodeGroup = rec.NodeGroup
		}
	}
	if rm.Started != nil || rm.Completed != nil {
		a.Removal, a.Group = rm, rm.NodeGroup
	}
	for _, ev := range own {
		if ev.Reason == status.EventScaleDownFailed || ev.Reason == status.EventScaleDownAborted {
			a.Failures = append(a.Failures, record(ev))
		}
	}
	r := Report{Kind: KindNode, Object: "node " + name, Node: a}
	e.goneText(&r, a, own)
	return r, nil
}

// namesNode reports whether a status ConfigMap event is about the node:
// its annotation names it (for an unregistered instance, by provider ID
// or the ID's last part, an instance ID).
func namesNode(ev v1.Event, name string) bool {
	n := ev.Annotations[status.AnnotationNode]
	return n != "" && (n == name || strings.HasSuffix(n, "/"+name))
}

func (e *Explainer) goneText(r *Report, a *NodeAnswer, own []v1.Event) {
	rm := a.Removal
	switch {
	case rm == nil:
		r.Verdict = "no longer exists; no event says the autoscaler removed it"
	case rm.Reason == status.RemovalUnregistered:
		r.Verdict = fmt.Sprintf("was never a node: the autoscaler deleted instance %s %s because it did not register within --max-node-provision-time",
			rm.Completed.Node, e.ago(rm.Completed.Time))
	case rm.Completed != nil:
		r.Verdict = fmt.Sprintf("was removed by the autoscaler %s: %s", e.ago(rm.Completed.Time), removalWhy(rm.Reason))
	default:
		r.Verdict = fmt.Sprintf("no longer exists; the autoscaler began removing it %s (%s), and no event records the end",
			e.ago(rm.Started.Time), removalWhy(rm.Reason))
	}
	if rm != nil {
		if rm.NodeGroup != "" {
			r.add("node group: %s", rm.NodeGroup)
		}
		if rm.Started != nil {
			r.add("removal began %s: %s", e.at(rm.Started.Time), rm.Started.Message)
		}
		if rm.Completed != nil {
			r.add("removal done %s: %s", e.at(rm.Completed.Time), rm.Completed.Message)
		}
	}
	for _, f := range a.Failures {
		r.add("earlier, a removal %s %s: %s", failedOrCalledOff(f.Reason), e.ago(f.Time), f.Message)
	}
	if rm == nil {
		for _, ev := range own {
			r.add("%s", e.eventLine(record(ev)))
		}
	}
}

// removalWhy says a removal reason in words.
func removalWhy(reason string) string {
	switch reason {
	case status.RemovalEmpty:
		return "it was empty (no pod had to move)"
	case status.RemovalUnderutilized:
		return "it was underutilized and its pods fit on other nodes"
	case status.RemovalUnready:
		return "it was unready (or its GPUs never appeared) for longer than --scale-down-unready-time"
	case status.RemovalConsolidation:
		return "consolidation: the cluster is cheaper without it"
	case status.RemovalRepair:
		return "node repair: its accelerators failed (a health condition, or GPUs gone from allocatable) for longer than their toleration time"
	case status.RemovalUnregistered:
		return "the instance never registered as a node"
	case "":
		return "the events carry no reason (written by an older gpuscale, or folded by the event recorder)"
	}
	return reason
}
