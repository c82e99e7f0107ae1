package autoscaler

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// A group backed by a capacity block (its CapacityBlockEnd option) loses
// its nodes when the block ends. From CapacityBlockLead before the end,
// the loop plans the group's nodes as gone, as it does interrupted nodes:
// their pods' replacements are ordered in that loop on other groups, and
// the shell drains the nodes by the time the cloud starts terminating
// them. The group is backed off until the end, so no pod is placed on
// capacity about to go.

// ReasonCapacityBlockEnding is the backoff and node reason of a group
// whose capacity block ends within the lead.
const ReasonCapacityBlockEnding = "CapacityBlockEnding"

// CapacityBlockTermination is how long before a capacity block's end the
// cloud starts terminating its instances (EC2 Capacity Blocks for ML: 30
// minutes); the drain's deadline.
const CapacityBlockTermination = 30 * time.Minute

// blocksEnding takes the nodes of groups whose capacity block ends within
// the lead out of the (forked) snapshot, backs the groups off until the
// end, and returns the removals that drain the nodes.
func (l *loop) blocksEnding(s *snapshot.Snapshot) ([]Action, error) {
	lead := l.opts.Interruption.CapacityBlockLead
	if lead <= 0 {
		return nil, nil
	}
	var gone []*snapshot.NodeInfo
	var removals []disruption.Removal
	for _, g := range s.NodeGroups() {
		if g.Options == nil || g.Options.CapacityBlockEnd == nil {
			continue
		}
		end := *g.Options.CapacityBlockEnd
		if l.in.Now.Before(end.Add(-lead)) {
			continue
		}
		deadline := end.Add(-CapacityBlockTermination)
		if !deadline.After(l.in.Now) {
			deadline = end
		}
		at := end.UTC().Format(time.RFC3339)
		l.state.MarkUnavailable(g.ID, end, l.in.Now, ReasonCapacityBlockEnding,
			fmt.Sprintf("the capacity block of group %s ends at %s", g.ID, at))
		signal := "capacity block ends " + at
		for _, ni := range s.NodesInGroup(g.ID) {
			gone = append(gone, ni)
			l.takenAway = append(l.takenAway, status.Node{Name: ni.Name(), Group: g.ID, State: status.NodeRemoving,
				Reason: ReasonCapacityBlockEnding, Message: fmt.Sprintf("the capacity block of group %s ends at %s: drained by %s, its pods' replacement ordered elsewhere",
					g.ID, at, deadline.UTC().Format(time.RFC3339))})
			if rm, ok := l.takeAway(ni, signal, deadline); ok {
				removals = append(removals, rm)
			}
		}
	}
	return l.planGone(s, gone, removals)
}

// blockLeadStarts are when the lead of each capacity block begins: from
// then a loop on unchanged inputs leaves the block, so the next decision
// is due then.
func (l *loop) blockLeadStarts() []time.Time {
	lead := l.opts.Interruption.CapacityBlockLead
	if lead <= 0 {
		return nil
	}
	var out []time.Time
	for _, g := range l.in.Snapshot.NodeGroups() {
		if g.Options != nil && g.Options.CapacityBlockEnd != nil {
			out = append(out, g.Options.CapacityBlockEnd.Add(-lead))
		}
	}
	return out
}
