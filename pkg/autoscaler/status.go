package autoscaler

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// status is the loop's account as data.
func (l *loop) status() status.Status {
	now, s := l.in.Now, l.in.Snapshot
	st := status.Status{Time: now}
	st.Cluster.Health = l.health
	groups := map[string]*status.NodeGroup{}
	for _, g := range s.NodeGroups() {
		ng := status.NodeGroup{ID: g.ID, Min: g.MinSize, Max: g.MaxSize, Target: g.TargetSize,
			Upcoming: l.state.Upcoming(g.ID), ScaleUp: l.activity(g.ID), Accelerators: accelerators(g.Template)}
		reg := l.state.Registration(g.ID)
		ng.Nodes.Unregistered, ng.Nodes.LongUnregistered = reg.Unregistered, reg.Long
		if ng.ScaleUp.State == status.ActivityInProgress {
			st.Cluster.ScaleUpInProgress = true
		}
		st.NodeGroups = append(st.NodeGroups, ng)
	}
	for i := range st.NodeGroups {
		groups[st.NodeGroups[i].ID] = &st.NodeGroups[i]
	}
	for i, ni := range l.nodes {
		g := groups[ni.Group]
		if g == nil {
			st.Cluster.Unmanaged++
			continue
		}
		countNode(&g.Nodes, l.readiness[i])
		if l.readiness[i] == clusterstate.NodeDevicesOverdue {
			st.DevicesOverdue = append(st.DevicesOverdue, ni.Name())
		}
	}
	for _, d := range l.state.Deleting() {
		if g := groups[d.Group]; g != nil {
			g.Nodes.BeingDeleted++
		}
	}
	for _, g := range st.NodeGroups {
		addCounts(&st.Cluster.Nodes, g.Nodes)
	}
	var options []status.Option
	for _, v := range l.upPlan.Options {
		options = append(options, status.Option{Group: v.Group, NodeCount: v.NodeCount, PodCount: v.PodCount, Verdict: v.Message(),
			Chosen: v.Chosen, DroppedBy: v.Expander, Score: v.Score, BestScore: v.BestScore, LostTieBreak: v.LostRandomTieBreak})
	}
	for _, su := range l.upPlan.ScaleUps {
		st.ScaleUps = append(st.ScaleUps, status.ScaleUp{Group: su.Group, From: su.NewTarget - su.Delta, To: su.NewTarget,
			Pods: su.Pods, Why: su.Why, Deadline: l.in.Now.Add(l.state.ProvisionTime(su.Group)), Options: options})
	}
	st.Triggered = refs(realPods(l.upPlan.Triggered))
	for _, p := range l.upPlan.Pending {
		real := realPods(p.Pods)
		if len(real) == 0 {
			continue
		}
		pp := status.PendingPods{Pods: refs(real)}
		for _, r := range p.Reasons {
			pp.Reasons = append(pp.Reasons, status.GroupReason{Group: r.Group, Reason: string(r.Reason),
				Predicate: r.Predicate, Message: r.Message})
		}
		st.Pending = append(st.Pending, pp)
	}
	st.BypassedSchedulers = l.opts.Pending.BypassedSchedulers
	st.OtherSchedulers = otherSchedulers(l.in.OtherSchedulers)
	st.Nodes = l.nodeStatuses(groups)
	l.bufferStatus(&st)
	st.Consolidation = l.consolidationStatus()
	st.Repair = l.repairStatus()
	st.Cluster.ScaleDown = status.ScaleDown{Skipped: l.downSkipped, SkippedMessage: l.downSkippedMessage,
		Candidates: len(l.downPlan.Unneeded) + len(l.downPlan.Delete)}
	if len(l.downPlan.Unneeded) > 0 {
		st.Cluster.ScaleDown.CooldownUntil, st.Cluster.ScaleDown.CooldownReason = l.downPlan.CooldownUntil, l.downPlan.CooldownReason
	}
	return st
}

// activity is a group's scale-up state: backed off, waiting for nodes it
// asked for, or idle.
func (l *loop) activity(group string) status.Activity {
	if b, off := l.state.BackedOff(group, l.in.Now); off {
		return status.Activity{State: status.ActivityBackoff, Since: b.LastFailure, Until: b.Until,
			Reason: b.Reason, Message: b.Message}
	}
	if r, ok := l.state.Request(group); ok {
		return status.Activity{State: status.ActivityInProgress, Since: r.Time}
	}
	return status.Activity{State: status.ActivityNone}
}

// nodeStatuses lists every node of a managed group that scale-down looked
// at: removed this loop, unneeded and waiting, or kept.
func (l *loop) nodeStatuses(groups map[string]*status.NodeGroup) []status.Node {
	out := make([]status.Node, 0, len(l.downPlan.Delete)+len(l.takenAway)+len(l.downPlan.Kept))
	unneeded := map[string]scaledown.Unneeded{}
	for _, u := range l.downPlan.Unneeded {
		unneeded[u.Node] = u
		groups[u.Group].Candidates++
	}
	for _, r := range l.downPlan.Delete {
		out = append(out, status.Node{Name: r.Node, Group: r.Group, State: status.NodeRemoving, UnneededSince: r.UnneededSince})
	}
	out = append(out, l.takenAway...)
	for _, k := range l.downPlan.Kept {
		if groups[k.Group] == nil {
			continue
		}
		n := status.Node{Name: k.Node, Group: k.Group, State: status.NodeKept, Reason: string(k.Reason), Message: k.Message,
			DrainRule: string(k.PodCode)}
		if u, ok := unneeded[k.Node]; ok {
			n.State, n.UnneededSince = status.NodeUnneeded, u.Since
		}
		if k.Pod != nil {
			r := ref(k.Pod)
			n.Pod = &r
		}
		out = append(out, n)
	}
	sortNodes(out)
	return out
}

func countNode(c *status.NodeCounts, st clusterstate.NodeState) {
	c.Registered++
	switch st {
	case clusterstate.NodeReady:
		c.Ready++
	case clusterstate.NodeStarting:
		c.NotStarted++
	case clusterstate.NodeAwaitingDevices:
		c.NotStarted++
		c.AwaitingDevices++
	case clusterstate.NodeUnready:
		c.Unready++
	case clusterstate.NodeDevicesOverdue:
		c.Unready++
		c.DevicesOverdue++
	}
}

func addCounts(sum *status.NodeCounts, c status.NodeCounts) {
	sum.Registered += c.Registered
	sum.Ready += c.Ready
	sum.Unready += c.Unready
	sum.NotStarted += c.NotStarted
	sum.AwaitingDevices += c.AwaitingDevices
	sum.DevicesOverdue += c.DevicesOverdue
	sum.Unregistered += c.Unregistered
	sum.LongUnregistered += c.LongUnregistered
	sum.BeingDeleted += c.BeingDeleted
}

// accelerators are a template's allocatable accelerators by resource.
func accelerators(t *v1.Node) map[string]int64 {
	if t == nil {
		return nil
	}
	var out map[string]int64
	for name, q := range t.Status.Allocatable {
		if gpu.IsGPUResource(name) {
			if out == nil {
				out = map[string]int64{}
			}
			out[string(name)] = q.Value()
		}
	}
	return out
}

func refs(pods []*v1.Pod) []status.Ref {
	out := make([]status.Ref, len(pods))
	for i, p := range pods {
		out[i] = ref(p)
	}
	return out
}

func ref(p *v1.Pod) status.Ref { return status.Ref{Namespace: p.Namespace, Name: p.Name, UID: p.UID} }

// classifyNodes classifies every node of the snapshot once per loop; the
// snapshot's own list changes while planners fork it, so it is copied.
func (l *loop) classifyNodes(s *snapshot.Snapshot) {
	l.nodes = slices.Clone(s.Nodes())
	l.readiness = make([]clusterstate.NodeState, len(l.nodes))
	groups := make([]*snapshot.NodeGroup, len(l.nodes))
	classify := l.state.Classifier(s, l.in.Now)
	for i, ni := range l.nodes {
		groups[i] = s.NodeGroup(ni.Group)
		l.readiness[i] = classify(ni, groups[i])
	}
	l.classify = classify.Known(l.nodes, groups, l.readiness)
}

func sortNodes(ns []status.Node) {
	slices.SortFunc(ns, func(a, b status.Node) int { return cmp.Compare(a.Name, b.Name) })
}

// otherSchedulers says why each scheduler's pods were left alone.
func otherSchedulers(in []pending.SchedulerPods) []status.SchedulerPods {
	if len(in) == 0 {
		return nil
	}
	out := make([]status.SchedulerPods, len(in))
	for i, o := range in {
		out[i] = status.SchedulerPods{Scheduler: o.Scheduler, Pods: o.Pods, Reason: status.ReasonSchedulerNotBypassed,
			Message: fmt.Sprintf("%d pod(s) of scheduler %q left alone: it is neither %s nor in --bypassed-scheduler-names, "+
				"so the autoscaler cannot tell where it would place them", o.Pods, o.Scheduler, v1.DefaultSchedulerName)}
	}
	return out
}
