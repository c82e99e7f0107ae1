package autoscaler

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// replacement is a consolidation replace move in flight: its new nodes
// were asked for at Since and its old nodes cordoned; they are drained
// once Count new nodes of the group are ready, or uncordoned if the new
// nodes do not come within --max-node-provision-time and
// --max-node-startup-time.
type replacement struct {
	old   []consolidation.NodeRef
	group string
	count int
	since time.Time
	// existing are the group's nodes when the replacement was launched:
	// the new nodes are the others.
	existing map[string]bool
}

// consolidate plans consolidation on the snapshot as scale-down leaves it
// (its removals of this loop done, their pods placed where the removal
// simulation put them), and carries on the replacements in flight. It
// runs only in loops that scale nothing up, whose scale-down ran out of
// cooldown, and where no pending pod waits for capacity: the cluster must
// be settled before pods are moved for money. Pods that no node group can
// ever take do not hold it; pods about to be scheduled on registered nodes
// are placed there first, as for scale-down, so no move takes their room.
func (l *loop) consolidate() ([]Action, error) {
	acts := l.advanceReplacements()
	if !l.opts.Consolidation.Enabled {
		return acts, nil
	}
	if l.consHeld, l.consHeldMessage = l.consolidationHeld(); l.consHeld != "" {
		return acts, nil
	}
	s := l.in.Snapshot
	s.Fork()
	defer func() { _ = s.Revert() }()
	if err := l.placeExpected(s); err != nil {
		return acts, err
	}
	deleting := l.deletingForScaleDown()
	for _, r := range l.downPlan.Delete {
		deleting = append(deleting, scaledown.Deletion{Node: r.Node, Group: r.Group, Drain: !r.Empty})
		if err := moveEvicted(s, r.Evict); err != nil {
			return acts, err
		}
	}
	plan := l.cons.Plan(consolidation.Input{Now: l.in.Now, Snapshot: s, PDBs: l.in.PDBs, Replicas: l.in.Replicas, DaemonSets: l.in.DaemonSets,
		Deleting: deleting, Replacing: l.replacingInput(s), Ordered: l.ordered(), State: l.consState, Readiness: l.classify})
	l.consState, l.consPlan = plan.State, plan
	for _, m := range plan.Moves {
		switch m.Kind {
		case consolidation.MoveDelete:
			acts = append(acts, l.removeNow(m))
		case consolidation.MoveReplace:
			acts = append(acts, l.launch(s, m)...)
		}
	}
	return acts, nil
}

// Codes of status.Consolidation.Held.
const (
	heldScaleDownNotRun = "ScaleDownNotRun"
	heldCooldown        = "ScaleDownInCooldown"
	heldPendingPods     = "PodsWaitForCapacity"
)

// consolidationHeld says why consolidation does not plan in this loop, or
// "".
func (l *loop) consolidationHeld() (string, string) {
	switch {
	case l.downSkipped != "":
		return heldScaleDownNotRun, "scale-down did not run: " + l.downSkippedMessage
	case !l.downPlan.CooldownUntil.IsZero():
		return heldCooldown, "scale-down is paused until " + l.downPlan.CooldownUntil.UTC().Format(time.RFC3339) + ": " +
			l.downPlan.CooldownReason
	}
	waiting, first := 0, ""
	for _, p := range l.upPlan.Pending {
		// Placeholders of CapacityBuffers are room wished for, not pods
		// waiting: they hold no consolidation back.
		real := realPods(p.Pods)
		if len(real) == 0 || !waitsForCapacity(p) {
			continue
		}
		if waiting == 0 {
			first = fmt.Sprintf(" (%s/%s: %s)", real[0].Namespace, real[0].Name, p.Message())
		}
		waiting += len(real)
	}
	if waiting > 0 {
		return heldPendingPods, fmt.Sprintf("%d pending pod(s) wait for capacity%s", waiting, first)
	}
	return "", ""
}

// waitsForCapacity tells whether capacity could help pending pods: some
// group could take them once a limit, a backoff or their age allows.
// Pods that fit no group's nodes, and expendable pods, wait for nothing
// consolidation could take from them.
func waitsForCapacity(p scaleup.PendingPods) bool {
	if len(p.Pods) == 0 {
		return false
	}
	for _, r := range p.Reasons {
		switch r.Reason {
		case scaleup.ReasonNotFit, scaleup.ReasonNoTemplate:
		case scaleup.ReasonExpendable:
			return false
		default:
			return true
		}
	}
	return false
}

// moveEvicted places a removal's pods where the simulation expects them,
// their claims allocated devices of the new node.
func moveEvicted(s *snapshot.Snapshot, moves []disruption.Move) error {
	var checker *predicates.Checker
	for _, m := range moves {
		ni := s.Node(m.To)
		if ni == nil {
			continue
		}
		if err := s.RemovePod(m.Pod.Namespace, m.Pod.Name); err != nil {
			return err
		}
		p := m.Pod.DeepCopy()
		p.Spec.NodeName = m.To
		pi, err := snapshot.NewPodInfo(p)
		if err != nil {
			return err
		}
		if checker == nil && len(p.Spec.ResourceClaims) > 0 {
			checker = predicates.New(s)
		}
		if err := bindWithClaims(s, checker, pi, ni); err != nil {
			return err
		}
	}
	return nil
}

// removeNow turns a delete move into a removal, carried out as scale-down
// removes a node.
func (l *loop) removeNow(m consolidation.Move) RemoveNodes {
	var out RemoveNodes
	out.MaxGracefulTermination = l.downPlan.MaxGracefulTermination
	for _, n := range m.Nodes {
		r := disruption.Removal{Node: n.Name, Group: n.Group, EvictOneByOne: m.EvictOneByOne, Consolidation: m.Message}
		for _, e := range m.Evict {
			if e.Pod.Spec.NodeName == n.Name {
				r.Evict = append(r.Evict, disruption.Move{Pod: e.Pod, To: e.To})
			}
		}
		for _, p := range m.DaemonSetPods {
			if p.Spec.NodeName == n.Name {
				r.DaemonSetPods = append(r.DaemonSetPods, p)
			}
		}
		r.Empty = len(r.Evict) == 0
		l.state.RecordDeletionStarted(clusterstate.Deletion{Node: n.Name, Group: n.Group, Drain: !r.Empty, Since: l.in.Now})
		out.Removals = append(out.Removals, r)
	}
	l.consolidated++
	return out
}

// launch starts a replace move: grow the group, cordon the old nodes.
func (l *loop) launch(s *snapshot.Snapshot, m consolidation.Move) []Action {
	g := s.NodeGroup(m.Launch.Group)
	if g == nil {
		return nil
	}
	r := replacement{old: m.Nodes, group: m.Launch.Group, count: m.Launch.Count, since: l.in.Now, existing: map[string]bool{}}
	for _, ni := range s.NodesInGroup(g.ID) {
		r.existing[ni.Name()] = true
	}
	l.replacing = append(l.replacing, r)
	l.consolidated++
	names := make([]string, len(m.Nodes))
	for i, n := range m.Nodes {
		names[i] = n.Name
	}
	why := fmt.Sprintf("consolidation: replaces %d node(s) ($%.3f/h) by %d ($%.3f/h)", len(m.Nodes), m.PriceBefore, m.Launch.Count, m.PriceAfter)
	return []Action{
		ScaleUp{Group: g.ID, Delta: m.Launch.Count, NewTarget: g.TargetSize + m.Launch.Count, Why: why},
		Cordon{Nodes: names, Reason: why},
	}
}

// advanceReplacements drains the old nodes of replacements whose new nodes
// are ready, and gives up on those whose new nodes did not come.
func (l *loop) advanceReplacements() []Action {
	var acts []Action
	kept := l.replacing[:0]
	for _, r := range l.replacing {
		wait := l.replacementWait(r)
		switch ready := l.readyNew(r); {
		case ready >= r.count:
			acts = append(acts, l.drainOld(r))
		case l.in.Now.Sub(r.since) >= wait:
			names := make([]string, len(r.old))
			for i, n := range r.old {
				names[i] = n.Name
			}
			acts = append(acts, Uncordon{Nodes: names, Reason: fmt.Sprintf(
				"consolidation: %d of %d replacement node(s) of %s ready after %s; the nodes stay", ready, r.count, r.group, wait)})
		default:
			kept = append(kept, r)
		}
	}
	l.replacing = kept
	return acts
}

// readyNew counts the replacement's new nodes that are ready, accelerators
// advertised.
func (l *loop) readyNew(r replacement) int {
	n := 0
	for i, ni := range l.nodes {
		if ni.Group == r.group && !r.existing[ni.Name()] && l.readiness[i] == clusterstate.NodeReady {
			n++
		}
	}
	return n
}

// drainOld removes the old nodes of a replacement, every pod but its
// DaemonSet and mirror pods evicted; the scheduler places them on the new
// capacity.
func (l *loop) drainOld(r replacement) RemoveNodes {
	out := RemoveNodes{MaxGracefulTermination: time.Duration(l.opts.ScaleDown.MaxGracefulTerminationSec) * time.Second}
	for _, n := range r.old {
		ni := l.in.Snapshot.Node(n.Name)
		if ni == nil {
			continue
		}
		rm := disruption.Removal{Node: n.Name, Group: n.Group, Consolidation: fmt.Sprintf(
			"consolidation: replaced by %d new node(s) of %s, now ready", r.count, r.group)}
		for _, pi := range ni.Pods {
			switch p := pi.Pod; {
			case drain.IsDaemonSetPod(p):
				rm.DaemonSetPods = append(rm.DaemonSetPods, p)
			case drain.IsMirrorPod(p), drain.IsTerminal(p):
			default:
				rm.Evict = append(rm.Evict, disruption.Move{Pod: p})
			}
		}
		rm.Empty = len(rm.Evict) == 0
		l.state.RecordDeletionStarted(clusterstate.Deletion{Node: n.Name, Group: n.Group, Drain: !rm.Empty, Since: l.in.Now})
		out.Removals = append(out.Removals, rm)
	}
	return out
}

// replacingInput tells the planner about replacements in flight.
func (l *loop) replacingInput(s *snapshot.Snapshot) []consolidation.Replacement {
	out := make([]consolidation.Replacement, 0, len(l.replacing))
	for _, r := range l.replacing {
		c := consolidation.Replacement{Group: r.group, Count: r.count}
		for _, n := range r.old {
			c.Nodes = append(c.Nodes, n.Name)
		}
		for _, ni := range s.NodesInGroup(r.group) {
			if !r.existing[ni.Name()] {
				c.New = append(c.New, ni.Name())
			}
		}
		out = append(out, c)
	}
	return out
}

// ordered are, by group, the nodes asked for and not registered, which the
// cluster limits count (clusterstate.State.Ordered).
func (l *loop) ordered() map[string]int {
	out := map[string]int{}
	for _, g := range l.in.Snapshot.NodeGroups() {
		if n := l.state.Ordered(g.ID); n > 0 {
			out[g.ID] = n
		}
	}
	return out
}

// reservedNew are the new nodes of replacements in flight: scale-down
// keeps them for the pods about to move there.
func (l *loop) reservedNew() map[string]string {
	if len(l.replacing) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, r := range l.replacing {
		for _, ni := range l.in.Snapshot.NodesInGroup(r.group) {
			if !r.existing[ni.Name()] {
				out[ni.Name()] = fmt.Sprintf("a new node replacing %d node(s) by consolidation; kept until they are drained", len(r.old))
			}
		}
	}
	return out
}

// replacingNodes are the old nodes of replacements in flight: scale-down
// leaves them alone.
func (l *loop) replacingNodes() []scaledown.Deletion {
	var out []scaledown.Deletion
	for _, r := range l.replacing {
		for _, n := range r.old {
			out = append(out, scaledown.Deletion{Node: n.Name, Group: n.Group, Drain: true})
		}
	}
	return out
}

// consolidationStatus reports the loop's moves and what is in flight.
func (l *loop) consolidationStatus() *status.Consolidation {
	if !l.opts.Consolidation.Enabled {
		return nil
	}
	c := &status.Consolidation{Held: l.consHeld, HeldMessage: l.consHeldMessage}
	for _, m := range l.consPlan.Moves {
		mv := status.Move{Kind: string(m.Kind), LaunchGroup: m.Launch.Group, LaunchCount: m.Launch.Count,
			PriceBefore: m.PriceBefore, PriceAfter: m.PriceAfter, Message: m.Message}
		for _, n := range m.Nodes {
			mv.Nodes = append(mv.Nodes, n.Name)
		}
		c.Moves = append(c.Moves, mv)
	}
	for _, w := range l.consPlan.Waiting {
		c.Waiting = append(c.Waiting, status.Waiting{Kind: string(w.Kind), Nodes: w.Nodes, Until: l.in.Now.Add(w.Wait)})
	}
	for _, r := range l.replacing {
		mv := status.Move{Kind: string(consolidation.MoveReplace), LaunchGroup: r.group, LaunchCount: r.count, Since: r.since}
		for _, n := range r.old {
			mv.Nodes = append(mv.Nodes, n.Name)
		}
		c.Replacing = append(c.Replacing, mv)
	}
	return c
}

// consolidationDeadlines are the times consolidation waits for: moves
// coming due and replacements timing out.
func (l *loop) consolidationDeadlines() []time.Time {
	var out []time.Time
	for _, w := range l.consPlan.Waiting {
		out = append(out, l.in.Now.Add(w.Wait))
	}
	for _, r := range l.replacing {
		out = append(out, r.since.Add(l.replacementWait(r)))
	}
	return out
}

// replacementWait is how long a replacement's new nodes may take to be
// ready: its group's max node provision time (the group's own, else the
// flag's), then --max-node-startup-time.
func (l *loop) replacementWait(r replacement) time.Duration {
	return l.state.ProvisionTime(r.group) + l.opts.ClusterState.MaxNodeStartupTime
}

// deletingForScaleDown are the removals in flight and the old nodes of
// replacements in flight: neither half moves them or moves pods to them.
func (l *loop) deletingForScaleDown() []scaledown.Deletion {
	var deleting []scaledown.Deletion
	for _, d := range l.state.Deleting() {
		deleting = append(deleting, scaledown.Deletion{Node: d.Node, Group: d.Group, Drain: d.Drain})
	}
	return append(deleting, l.replacingNodes()...)
}
