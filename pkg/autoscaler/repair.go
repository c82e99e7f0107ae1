package autoscaler

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/repair"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// repairMemory is node repair's memory from one loop to the next: when
// each unhealthy node was first seen (the clock of signals that carry no
// time of their own, such as GPUs gone from allocatable), and which
// removals in flight are repairs (the share cap counts them).
type repairMemory struct {
	seen      map[string]time.Time
	repairing map[string]bool
}

// repair plans node repair on the cluster as the other planners leave it:
// their removals of this loop count against the same budgets. A repair
// removes the node as scale-down does (taint, drain, delete); its pods go
// pending and scale-up finds them room, except where the group is at its
// minimum size, whose replacement is ordered first so the removal is
// allowed.
func (l *loop) repair() []Action {
	if !l.opts.Repair.Enabled {
		return nil
	}
	m := &l.repairMem
	for n := range m.repairing {
		if !l.state.IsDeleting(n) {
			delete(m.repairing, n)
		}
	}
	var disrupting []repair.Disrupting
	for _, d := range l.deletingForScaleDown() {
		disrupting = append(disrupting, repair.Disrupting{Node: d.Node, Group: d.Group, Repair: m.repairing[d.Node]})
	}
	s := l.in.Snapshot
	plan := l.rep.Plan(repair.Input{Now: l.in.Now, Snapshot: s, Readiness: l.classify,
		Seen: m.seen, Disrupting: disrupting, PDBs: l.in.PDBs, Replicas: l.in.Replicas})
	m.seen, l.repairPlan = plan.Seen, plan
	if len(plan.Repairs) == 0 {
		return nil
	}
	var acts []Action
	ordered := map[string]int{}
	rm := RemoveNodes{MaxGracefulTermination: time.Duration(l.opts.ScaleDown.MaxGracefulTerminationSec) * time.Second}
	for _, r := range plan.Repairs {
		if r.Replace {
			acts = append(acts, l.replaceFirst(r.Removal, ordered[r.Removal.Group]))
			ordered[r.Removal.Group]++
		}
		m.repairing[r.Removal.Node] = true
		l.state.RecordDeletionStarted(clusterstate.Deletion{Node: r.Removal.Node, Group: r.Removal.Group, Drain: !r.Removal.Empty, Since: l.in.Now})
		rm.Removals = append(rm.Removals, r.Removal)
	}
	return append(acts, rm)
}

// replaceFirst orders one node for a group at its minimum size before its
// broken node goes, on top of what this loop's scale-ups and the earlier
// replacements of this plan (before of them) ask of it.
func (l *loop) replaceFirst(r disruption.Removal, before int) ScaleUp {
	target := l.in.Snapshot.NodeGroup(r.Group).TargetSize
	for _, su := range l.upPlan.ScaleUps {
		if su.Group == r.Group {
			target = su.NewTarget
		}
	}
	return ScaleUp{Group: r.Group, Delta: 1, NewTarget: target + before + 1,
		Why: fmt.Sprintf("repair: replaces node %s, which goes next and would take the group below its minimum size", r.Node)}
}

// repairStatus reports every unhealthy node and its state; nil while
// repair is off.
func (l *loop) repairStatus() *status.Repair {
	if !l.opts.Repair.Enabled {
		return nil
	}
	out := &status.Repair{}
	for _, n := range l.repairPlan.Nodes {
		out.Nodes = append(out.Nodes, status.RepairNode{Name: n.Name, Group: n.Group, Reason: n.Reason, Condition: n.Condition,
			Message: n.Message, Since: n.Since, Due: n.Due, State: n.State, Held: n.Held, HeldMessage: n.HeldMessage})
	}
	return out
}

// repairDeadlines are the times unhealthy nodes come due.
func (l *loop) repairDeadlines() []time.Time {
	var out []time.Time
	for _, n := range l.repairPlan.Nodes {
		if n.Held == repair.HeldTolerating {
			out = append(out, n.Due)
		}
	}
	return out
}
