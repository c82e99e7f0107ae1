package scaledown

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// room tracks how many more nodes each group, and the cluster, can lose in
// this loop. It is checked before each simulation and charged after each
// success, so nodes that may not go anyway stay in the snapshot and their
// capacity stays available to the pods of other candidates.
type room struct {
	groups map[string]*groupRoom
	// minimums is set when some cluster-wide minimum is above zero; only
	// then are node totals computed.
	minimums bool
	totals   limits.Totals // of the nodes not being deleted
	per      limits.Totals // of the node last checked
}

type groupRoom struct {
	// target is the group's target size, which counts nodes being deleted
	// until their removal completes.
	target, min, deleting, unneeded int
}

func (r *room) init(s *session) {
	r.groups = map[string]*groupRoom{}
	l := &s.opts.Limits
	r.minimums = l.Cores.Min > 0 || l.MemoryGiB.Min > 0
	for _, g := range l.GPUs {
		r.minimums = r.minimums || g.Min > 0
	}
}

// count adds a node that is not being deleted to the cluster totals.
func (r *room) count(s *session, st *nodeState) {
	if r.minimums {
		r.totals.Add(limits.NodeTotalsIn(s.snap, st.ni), 1)
	}
}

func (r *room) group(g *snapshot.NodeGroup, s *session) *groupRoom {
	gr := r.groups[g.ID]
	if gr == nil {
		gr = &groupRoom{target: g.TargetSize, min: g.MinSize, deleting: s.deletingGroups[g.ID]}
		r.groups[g.ID] = gr
	}
	return gr
}

// check returns why the node may not go because of a minimum, or "".
func (r *room) check(s *session, st *nodeState) (Reason, string) {
	g := r.group(st.group, s)
	if g.target-g.deleting-g.unneeded <= g.min {
		return ReasonMinSize, fmt.Sprintf(
			"node group %s is at its minimum size %d (target size %d, %d being removed, %d found unneeded in this loop)",
			st.group.ID, g.min, g.target, g.deleting, g.unneeded)
	}
	if r.minimums {
		r.per = limits.NodeTotalsIn(s.snap, st.ni)
		if below, which := s.opts.Limits.BelowMinimum(r.totals, r.per); below {
			return ReasonClusterMinimum, fmt.Sprintf("removing the node would take the cluster below the minimum of --%s", which)
		}
	}
	return "", ""
}

// take charges the removal of the node check last passed.
func (r *room) take(s *session, st *nodeState) {
	r.group(st.group, s).unneeded++
	if r.minimums {
		r.totals.Add(r.per, -1)
	}
}
