package repair

import (
	"fmt"
	"math"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Why an unhealthy node is not repaired in this loop (Node.Held).
const (
	// HeldTolerating: the node has not been unhealthy for the toleration
	// time yet.
	HeldTolerating = "Tolerating"
	// HeldGroupBroken: the group's health brake holds.
	HeldGroupBroken = "GroupLooksBroken"
	// HeldShare: the group has --repair-max-percentage of its nodes under
	// repair already.
	HeldShare = "RepairShareReached"
	// HeldBudget: a disruption budget allows no more disruption of the
	// group now.
	HeldBudget = "DisruptionBudget"
	// HeldWindow: a maintenance window covers the group and none is open.
	HeldWindow = "DisruptionWindowClosed"
	// HeldDoNotDisrupt: the node is annotated do-not-disrupt.
	HeldDoNotDisrupt = "DoNotDisrupt"
	// HeldPod: a pod on the node may not be evicted (its drain rule says
	// which).
	HeldPod = "PodBlocksDrain"
	// HeldMinMax: the group is at its minimum and its maximum size, so
	// the node can be neither removed nor replaced first.
	HeldMinMax = "GroupAtMinAndMaxSize"
)

// States of an unhealthy node (Node.State).
const (
	StateRepairing = status.RepairRepairing
	StateHeld      = status.RepairHeld
	// StateRemoving: a removal of the node is in flight already.
	StateRemoving = status.RepairRemoving
)

// Input is what one loop's repair plan depends on.
type Input struct {
	Now      time.Time
	Snapshot *snapshot.Snapshot
	// Readiness is the loop's classification of nodes.
	Readiness clusterstate.Classifier
	// Seen is when the loop first found each node unhealthy (the previous
	// Plan's Seen).
	Seen map[string]time.Time
	// Disrupting are the nodes being disrupted now by every planner,
	// those started in this loop included; Repairs marks those of them
	// that are repairs.
	Disrupting []Disrupting
	PDBs       []*policyv1.PodDisruptionBudget
	Replicas   drain.Replicas
}

// Disrupting is a node whose voluntary disruption is in flight.
type Disrupting struct {
	Node, Group string
	Repair      bool
}

// Node is an unhealthy node and what the plan does about it.
type Node struct {
	Name, Group string
	// Reason is ReasonCondition or ReasonGPUsMissing; Condition is the
	// condition as Type=Status for the former; Message says it for people.
	Reason, Condition, Message string
	// Since is when the node became unhealthy; Due when its toleration
	// time ends.
	Since, Due time.Time
	State      string
	// Held is a Held* code when State is StateHeld, HeldMessage says it.
	Held, HeldMessage string
}

// Repair is a node to remove now.
type Repair struct {
	Removal disruption.Removal
	// Replace is set when removing the node would take its group below
	// its minimum size: the replacement is ordered first.
	Replace bool
}

// Plan is one loop's repair decisions.
type Plan struct {
	// Nodes are every unhealthy node of a managed group, by name.
	Nodes []Node
	// Repairs are the removals to start, by node name.
	Repairs []Repair
	// Seen is the memory for the next loop.
	Seen map[string]time.Time
}

// Planner plans repairs with fixed options.
type Planner struct {
	opts  Options
	rules drain.Rules
}

// NewPlanner validates opts.
func NewPlanner(opts Options) (*Planner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Planner{opts: opts, rules: drain.Default(opts.Drain)}, nil
}

// group is one node group's counts in a loop.
type group struct {
	size, unhealthy, disrupting, repairing int
	// ordered counts the replacements this plan orders first.
	ordered int
	policy  disruption.Group
	brake   string
}

// Plan finds the unhealthy nodes and starts the repairs the limits allow,
// in node name order. It changes nothing in the snapshot.
func (p *Planner) Plan(in Input) Plan {
	s := in.Snapshot
	out := Plan{Seen: map[string]time.Time{}}
	groups := map[string]*group{}
	busy := map[string]bool{}
	for _, d := range in.Disrupting {
		busy[d.Node] = true
		g := p.groupOf(groups, s, d.Group, in.Now)
		g.disrupting++
		if d.Repair {
			g.repairing++
		}
	}
	var found []Node
	for _, ni := range s.Nodes() {
		ng := s.NodeGroup(ni.Group)
		if ng == nil {
			continue
		}
		f, bad := p.opts.inspect(ni.Node, in.Readiness.State(s, in.Now, ni, ng), in.Seen[ni.Name()], in.Now)
		if !bad {
			continue
		}
		out.Seen[ni.Name()] = in.Seen[ni.Name()]
		if out.Seen[ni.Name()].IsZero() {
			out.Seen[ni.Name()] = in.Now
		}
		p.groupOf(groups, s, ni.Group, in.Now).unhealthy++
		found = append(found, Node{Name: ni.Name(), Group: ni.Group, Reason: f.reason, Condition: f.condition,
			Message: f.message, Since: f.since, Due: f.since.Add(f.after)})
	}
	for _, g := range groups {
		g.brake = p.brake(g)
	}
	pdbs := drain.NewBudgets(in.PDBs)
	for i := range found {
		n := &found[i]
		if busy[n.Name] || disruption.TaintedToBeDeleted(in.Snapshot.Node(n.Name).Node, in.Now, p.opts.MaxCloudProviderNodeDeletionTime) {
			n.State = StateRemoving
			continue
		}
		r, held, msg := p.judge(in, pdbs, groups[n.Group], n)
		if held != "" {
			n.State, n.Held, n.HeldMessage = StateHeld, held, msg
			continue
		}
		n.State = StateRepairing
		g := groups[n.Group]
		g.disrupting++
		g.repairing++
		if r.Replace {
			g.ordered++
		}
		out.Repairs = append(out.Repairs, r)
	}
	out.Nodes = found
	return out
}

func (p *Planner) groupOf(groups map[string]*group, s *snapshot.Snapshot, id string, now time.Time) *group {
	if g := groups[id]; g != nil {
		return g
	}
	size := len(s.NodesInGroup(id))
	g := &group{size: size, policy: disruption.ForGroup(id, size, now, p.opts.Disruption)}
	groups[id] = g
	return g
}

// brake says why a group looks broken as a whole, or "".
func (p *Planner) brake(g *group) string {
	if g.unhealthy > p.opts.OkUnhealthyCount && float64(g.unhealthy) > p.opts.MaxUnhealthyPercentage/100*float64(g.size) {
		return fmt.Sprintf("%d of the group's %d nodes are unhealthy, more than --repair-ok-unhealthy-count %d and "+
			"--repair-max-unhealthy-percentage %g%%: the group looks broken as a whole (an outage, a bad image or driver), "+
			"not repairing until fewer are", g.unhealthy, g.size, p.opts.OkUnhealthyCount, p.opts.MaxUnhealthyPercentage)
	}
	return ""
}

// judge decides one unhealthy node: the removal to start, or the Held
// code and message.
func (p *Planner) judge(in Input, pdbs *drain.Budgets, g *group, n *Node) (Repair, string, string) {
	ni := in.Snapshot.Node(n.Name)
	share := int(math.Ceil(p.opts.MaxPercentage * float64(g.size) / 100))
	switch {
	case in.Now.Before(n.Due):
		return Repair{}, HeldTolerating, fmt.Sprintf("unhealthy since %s; repaired at %s", n.Since.UTC().Format(time.RFC3339),
			n.Due.UTC().Format(time.RFC3339))
	case g.brake != "":
		return Repair{}, HeldGroupBroken, g.brake
	case g.repairing >= share:
		return Repair{}, HeldShare, fmt.Sprintf("%d of the group's %d nodes are under repair, the most --repair-max-percentage %g%% allows",
			g.repairing, g.size, p.opts.MaxPercentage)
	case !g.policy.Open:
		return Repair{}, HeldWindow, fmt.Sprintf("no maintenance window of the group is open (%s)", strings.Join(g.policy.Windows, "; "))
	case g.disrupting >= g.policy.Allowance:
		return Repair{}, HeldBudget, fmt.Sprintf("%d of the group's nodes are being disrupted, the most disruption budget %q allows",
			g.disrupting, g.policy.Budget)
	}
	if k := drain.DoNotDisrupt(ni.Node.Annotations); k != "" {
		return Repair{}, HeldDoNotDisrupt, fmt.Sprintf("node %s is annotated %s=true", n.Name, k)
	}
	// The removals in flight will each lower the target by one, the
	// replacements ordered in this plan raise it.
	ng := in.Snapshot.NodeGroup(n.Group)
	target := ng.TargetSize + g.ordered
	replace := target-g.disrupting-1 < ng.MinSize
	if replace && target >= ng.MaxSize {
		return Repair{}, HeldMinMax, fmt.Sprintf("group %s is at its minimum size %d and its maximum %d: the node can be neither removed nor replaced first",
			n.Group, ng.MinSize, ng.MaxSize)
	}
	rm := disruption.Removal{Node: n.Name, Group: n.Group, Repair: "repair: " + n.Message}
	dc := &drain.Context{Now: in.Now, Node: ni.Node, Budgets: pdbs, Replicas: in.Replicas}
	for _, pi := range ni.Pods {
		pod := pi.Pod
		switch v := p.rules.Evaluate(dc, pod); v.Outcome {
		case drain.Block:
			return Repair{}, HeldPod, fmt.Sprintf("%s (drain rule %s)", v.Message, v.Code)
		case drain.Wait:
			return Repair{}, HeldPod, fmt.Sprintf("pod %s/%s must complete first (%s)", pod.Namespace, pod.Name, v.Code)
		case drain.Skip:
			if drain.IsDaemonSetPod(pod) {
				rm.DaemonSetPods = append(rm.DaemonSetPods, pod)
			}
		default:
			rm.Evict = append(rm.Evict, disruption.Move{Pod: pod})
		}
	}
	// The PodDisruptionBudgets are drawn on only once the node is sure to
	// go, so a held node takes no allowance from the next.
	for _, m := range rm.Evict {
		if pdbs.Consume(m.Pod) {
			rm.EvictOneByOne = true
		}
	}
	rm.Empty = len(rm.Evict) == 0
	return Repair{Removal: rm, Replace: replace}, "", ""
}
