package explain

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// recentEvents is how many scale-ups and removals a node group answer
// lists.
const recentEvents = 10

// NodeGroupAnswer is one node group's autoscaling state.
type NodeGroupAnswer struct {
	Name   string           `json:"name"`
	Min    *int             `json:"min,omitempty"`
	Max    *int             `json:"max,omitempty"`
	Target *int             `json:"target,omitempty"`
	Health string           `json:"health"`
	Counts status.DocCounts `json:"counts"`
	// ScaleUp is the group's scale-up condition, Backoff set while its
	// scale-ups are backed off.
	ScaleUp   Condition `json:"scaleUp"`
	Backoff   *Backoff  `json:"backoff,omitempty"`
	ScaleDown ScaleDown `json:"scaleDown"`
	// LimitsReached are the bounds that stop the group: its own size
	// limits and, from the pending pods' reasons, cluster-wide limits.
	LimitsReached []Limit `json:"limitsReached,omitempty"`
	// ScaleUps are the scale-ups of the status's loop that weighed the
	// group, with each option's verdict.
	ScaleUps []status.ScaleUp `json:"scaleUps,omitempty"`
	// Pending counts the pending pods the group does not help, by reason.
	Pending []PendingReason `json:"pending,omitempty"`
	// Nodes are the group's nodes the status lists (removed, unneeded,
	// kept for a reason).
	Nodes []status.Node `json:"nodes,omitempty"`
	// RecentScaleUps and RecentRemovals come from the autoscaler's events,
	// newest first. FoldedEvents counts events on the status ConfigMap the
	// event recorder folded together, which no longer name their group.
	RecentScaleUps []EventRecord `json:"recentScaleUps,omitempty"`
	RecentRemovals []EventRecord `json:"recentRemovals,omitempty"`
	FoldedEvents   int           `json:"foldedEvents,omitempty"`
	Status         StatusInfo    `json:"status"`
}

// Limit is a bound a node group has reached.
type Limit struct {
	// Code is scale-up's reason code (MaxNodeGroupSizeReached,
	// MaxResourceLimitReached) or NodeGroupMinSizeReached.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PendingReason counts pending pods the group does not help for one
// reason.
type PendingReason struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Pods    int    `json:"pods"`
}

// NodeGroup explains one node group: size and bounds, node counts,
// scale-up activity and backoff, limits reached, the scale-ups that
// weighed it, its pending pods and nodes, and its recent scale-ups and
// removals.
func (e *Explainer) NodeGroup(ctx context.Context, name string) (Report, error) {
	st, err := e.status(ctx)
	if err != nil {
		return Report{}, err
	}
	var g *status.NodeGroupStatus
	names := make([]string, 0, len(st.NodeGroups))
	for i := range st.NodeGroups {
		names = append(names, st.NodeGroups[i].Name)
		if st.NodeGroups[i].Name == name {
			g = &st.NodeGroups[i]
		}
	}
	if g == nil {
		return Report{}, fmt.Errorf("node group %s is not in the autoscaler's status (its node groups: %s)", name, strings.Join(names, ", "))
	}
	a := &NodeGroupAnswer{Name: name, Min: g.Health.MinSize, Max: g.Health.MaxSize, Target: g.Health.CloudProviderTarget,
		Health: g.Health.Status, Counts: g.Health.NodeCounts, Status: e.statusInfo(st),
		ScaleUp:   Condition{Status: g.ScaleUp.Status, Since: timeOf(g.ScaleUp.LastTransitionTime.Time)},
		ScaleDown: ScaleDown{Condition: Condition{Status: g.ScaleDown.Status}, Candidates: g.ScaleDown.Candidates}}
	if b, ok := backoffOf(*g); ok {
		a.Backoff = &b
	}
	groupFromStatus(a, st)
	if err := e.groupEvents(ctx, a); err != nil {
		return Report{}, err
	}
	r := Report{Kind: KindNodeGroup, Object: "nodegroup " + name, NodeGroup: a}
	e.nodeGroupText(&r, a)
	return r, nil
}

// groupFromStatus fills limits, scale-ups, pending pods and nodes.
func groupFromStatus(a *NodeGroupAnswer, st *status.Document) {
	if a.Target != nil && a.Max != nil && *a.Target >= *a.Max {
		a.LimitsReached = append(a.LimitsReached, Limit{Code: status.ReasonMaxNodeGroupSize,
			Message: fmt.Sprintf("at its maximum size %d: it cannot grow", *a.Max)})
	}
	if a.Target != nil && a.Min != nil && *a.Target <= *a.Min {
		a.LimitsReached = append(a.LimitsReached, Limit{Code: status.ReasonMinNodeGroupSize,
			Message: fmt.Sprintf("at its minimum size %d: scale-down removes none of its nodes", *a.Min)})
	}
	byReason := map[string]int{}
	var order []PendingReason
	for _, p := range st.PendingPods {
		for _, gr := range p.Reasons {
			if gr.Group != a.Name {
				continue
			}
			if _, seen := byReason[gr.Reason]; !seen {
				byReason[gr.Reason] = len(order)
				order = append(order, PendingReason{Reason: gr.Reason, Message: gr.Message})
			}
			order[byReason[gr.Reason]].Pods += p.Count
			if gr.Reason == status.ReasonClusterLimit && !hasLimit(a.LimitsReached, gr.Reason) {
				a.LimitsReached = append(a.LimitsReached, Limit{Code: gr.Reason, Message: gr.Message})
			}
		}
	}
	a.Pending = order
	for _, su := range st.ScaleUps {
		if su.Group == a.Name || hasOption(su, a.Name) {
			a.ScaleUps = append(a.ScaleUps, su)
		}
	}
	for _, n := range st.Nodes {
		if n.Group == a.Name {
			a.Nodes = append(a.Nodes, n)
		}
	}
}

func hasLimit(ls []Limit, code string) bool {
	for _, l := range ls {
		if l.Code == code {
			return true
		}
	}
	return false
}

func hasOption(su status.ScaleUp, group string) bool {
	for _, o := range su.Options {
		if o.Group == group {
			return true
		}
	}
	return false
}

// groupEvents reads the group's recent scale-ups (ScaledUpGroup on the
// status ConfigMap) and removals (ScaleDown on its nodes, instances that
// never registered deleted).
func (e *Explainer) groupEvents(ctx context.Context, a *NodeGroupAnswer) error {
	cm, err := e.statusEvents(ctx, status.EventScaledUpGroup, status.EventDeleteUnregistered)
	if err != nil {
		return err
	}
	nodes, err := e.events(ctx, eventQuery{kind: "Node", reasons: []string{status.EventScaleDown}})
	if err != nil {
		return err
	}
	for _, ev := range cm {
		switch g := ev.Annotations[status.AnnotationNodeGroup]; {
		case g == "":
			a.FoldedEvents++
		case g != a.Name:
		case ev.Reason == status.EventScaledUpGroup:
			a.RecentScaleUps = appendRecent(a.RecentScaleUps, ev)
		default:
			a.RecentRemovals = appendRecent(a.RecentRemovals, ev)
		}
	}
	for _, ev := range nodes {
		if ev.Annotations[status.AnnotationNodeGroup] == a.Name {
			a.RecentRemovals = appendRecent(a.RecentRemovals, ev)
		}
	}
	sortRecords(a.RecentRemovals)
	return nil
}

func appendRecent(rs []EventRecord, ev v1.Event) []EventRecord {
	if len(rs) >= recentEvents {
		return rs
	}
	return append(rs, record(ev))
}

func sortRecords(rs []EventRecord) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Time.After(rs[j-1].Time); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func (e *Explainer) nodeGroupText(r *Report, a *NodeGroupAnswer) {
	size := "size unknown"
	if a.Target != nil && a.Min != nil && a.Max != nil {
		size = fmt.Sprintf("target %d (min %d, max %d)", *a.Target, *a.Min, *a.Max)
	}
	r.Verdict = size + ", " + a.Health
	switch {
	case a.Backoff != nil:
		r.Verdict += "; scale-ups backed off"
	case a.ScaleUp.Status == status.ActivityInProgress:
		r.Verdict += "; scaling up"
	}
	r.add("nodes: %s", countsText(a.Counts))
	e.conditionLine(r, "scale-up", a.ScaleUp)
	if a.Backoff != nil {
		r.add("%s", e.backoffLine(*a.Backoff))
	}
	r.add("scale-down: %s, %d candidate(s)", a.ScaleDown.Status, a.ScaleDown.Candidates)
	for _, l := range a.LimitsReached {
		r.add("limit reached: %s (%s)", l.Message, l.Code)
	}
	for _, p := range a.Pending {
		r.add("does not help %d pending pod(s): %s (%s)", p.Pods, p.Message, p.Reason)
	}
	if len(a.ScaleUps) > 0 {
		r.add("in the status's loop:")
		e.scaleUpText(r, a.ScaleUps, 0)
	}
	for _, n := range a.Nodes {
		line := fmt.Sprintf("node %s: %s", n.Name, n.State)
		if n.Reason != "" {
			line += " (" + n.Reason + ")"
		}
		if n.Message != "" {
			line += ": " + n.Message
		}
		r.add("%s", line)
	}
	for _, ev := range a.RecentScaleUps {
		r.add("scaled up %s: %s", e.ago(ev.Time), ev.Message)
	}
	for _, ev := range a.RecentRemovals {
		r.add("removal %s: %s %s", e.ago(ev.Time), removedWhat(ev), removalWhy(ev.RemovalReason))
	}
	if a.FoldedEvents > 0 {
		r.add("(%d event(s) on the status ConfigMap were folded together by the event recorder and no longer name their node group)", a.FoldedEvents)
	}
	r.add("(status written %s)", e.statusTimeText(a.Status.Time))
}

// removedWhat names what a removal event removed.
func removedWhat(ev EventRecord) string {
	if ev.Node != "" {
		return ev.Node + ":"
	}
	return strings.TrimPrefix(ev.Object, "Node ") + ":"
}
