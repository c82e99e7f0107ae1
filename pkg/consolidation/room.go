package consolidation

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// room tracks, over one pass, how many more nodes each group may lose (its
// disruption budget, its minimum size) and how far the cluster is from its
// limits. It is checked before each simulation and charged after each move,
// so nodes that may not go anyway stay in the snapshot and keep their room
// for the pods of other moves.
type room struct {
	groups map[string]*groupRoom
	sizes  map[string]int
	// minimums is set when some cluster-wide minimum is above zero; only
	// then are the totals of nodes that stay kept.
	minimums bool
	// staying sums the nodes that are not being removed; all sums every
	// node plus the replacement nodes asked for and not registered yet,
	// for the maximums.
	staying, all limits.Totals
}

// groupRoom is one node group's account.
type groupRoom struct {
	g *snapshot.NodeGroup
	// busy counts nodes being deleted or replaced by earlier passes;
	// planned those moves of this pass take.
	busy, planned int
	// policy is what the budgets and windows allow the group now.
	policy disruption.Group
	// tmpl is what one new node of the group adds to the totals, once
	// counted (templateTotals).
	tmpl *limits.Totals
}

// templateTotals is limits.TemplateTotals of the group, counted once a
// pass: replacements ask it of every group for every candidate.
func (g *groupRoom) templateTotals() limits.Totals {
	if g.tmpl == nil {
		t := limits.TemplateTotals(g.g)
		g.tmpl = &t
	}
	return *g.tmpl
}

func (r *room) init(s *session) {
	r.groups = map[string]*groupRoom{}
	r.sizes = map[string]int{}
	l := &s.opts.Limits
	r.minimums = l.Cores.Min > 0 || l.MemoryGiB.Min > 0
	for _, g := range l.GPUs {
		r.minimums = r.minimums || g.Min > 0
	}
	for _, ni := range s.snap.Nodes() {
		r.sizes[ni.Group]++
	}
	r.all = s.p.tally.Of(s.snap)
	for _, g := range s.snap.NodeGroups() {
		if n := s.in.Ordered[g.ID]; n > 0 && g.Template != nil {
			r.all.Add(limits.TemplateTotals(g), n)
		}
	}
	busy := map[string]int{}
	for _, d := range s.in.Deleting {
		busy[d.Group]++
	}
	for _, ni := range s.snap.Nodes() {
		if s.replacing[ni.Name()] && !s.deleting[ni.Name()] {
			busy[ni.Group]++
		}
	}
	for _, g := range s.snap.NodeGroups() {
		gr := &groupRoom{g: g, busy: busy[g.ID]}
		gr.policy = disruption.ForGroup(g.ID, r.sizes[g.ID], s.in.Now,
			disruption.Policy{Budgets: s.opts.Budgets, Windows: s.opts.Windows}, s.opts.Disruption)
		r.groups[g.ID] = gr
	}
}

// count adds a node that is not being removed to the staying totals.
func (r *room) count(st *nodeState) {
	if r.minimums {
		r.staying.Add(limits.NodeTotals(st.ni.Node), 1)
	}
}

func (r *room) group(g *snapshot.NodeGroup) *groupRoom { return r.groups[g.ID] }

// disrupt returns why n more nodes of g may not be disrupted in this pass,
// or "".
func (r *room) disrupt(g *groupRoom, n int) (Reason, string) {
	inUse := g.busy + g.planned
	if g.policy.Limited() && inUse+n > g.policy.Allowance {
		return ReasonBudget, fmt.Sprintf("node group %s may have %d nodes disrupted at once (budget %q), %d are already",
			g.g.ID, g.policy.Allowance, g.policy.Budget, inUse)
	}
	if g.g.TargetSize-inUse-n < g.g.MinSize {
		return ReasonMinSize, fmt.Sprintf(
			"node group %s is at its minimum size %d (target size %d, %d being removed or replaced)",
			g.g.ID, g.g.MinSize, g.g.TargetSize, inUse)
	}
	return "", ""
}

// belowMinimum returns why removing nodes, while launch adds its nodes,
// would take the cluster below a minimum, or "". The nodes' totals are
// counted only when some minimum is set.
func (r *room) belowMinimum(s *session, nodes []int32, launch Launch) (Reason, string) {
	if !r.minimums {
		return "", ""
	}
	var per limits.Totals
	for _, i := range nodes {
		per.Add(limits.NodeTotals(s.nodes[i].ni.Node), 1)
	}
	per.Add(s.launchTotals(launch), -1)
	if below, which := s.opts.Limits.BelowMinimum(r.staying, per); below {
		return ReasonClusterMinimum, fmt.Sprintf("removing the node would take the cluster below the minimum of --%s", which)
	}
	return "", ""
}

// headroom is how many nodes of g may be added, old nodes still running:
// the group's maximum size and the cluster's maximums. limit names the
// cluster limit that binds, "" when the group's maximum size does
// (headroomWhy says which in words).
func (r *room) headroom(s *session, g *snapshot.NodeGroup) (n int, limit string) {
	n = g.MaxSize - g.TargetSize
	if g.Template != nil {
		if h, l := s.opts.Limits.Headroom(r.all, r.group(g).templateTotals()); h < n {
			n, limit = h, l
		}
	}
	return max(n, 0), limit
}

// headroomWhy says what bounds headroom: the cluster limit, else the
// group's maximum size.
func headroomWhy(g *snapshot.NodeGroup, limit string) string {
	if limit != "" {
		return "--" + limit
	}
	return fmt.Sprintf("node group %s max size %d", g.ID, g.MaxSize)
}

// take charges a move: nodes leave their groups, their totals leave the
// staying ones, and a replacement's nodes join the cluster.
func (r *room) take(s *session, nodes []int32, launch Launch) {
	for _, i := range nodes {
		st := &s.nodes[i]
		r.group(st.group).planned++
		if r.minimums {
			r.staying.Add(limits.NodeTotals(st.ni.Node), -1)
		}
	}
	if launch.Count > 0 {
		t := limits.TemplateTotals(s.snap.NodeGroup(launch.Group))
		r.all.Add(t, launch.Count)
		if r.minimums {
			r.staying.Add(t, launch.Count)
		}
	}
}
