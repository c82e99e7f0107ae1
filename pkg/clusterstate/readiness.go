package clusterstate

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Taint key prefixes the Cluster Autoscaler reads: a node carrying a taint
// with a startup prefix is still starting (the taint comes off once an
// agent on the node is ready); a status taint reports something about the
// node and never blocks a simulated pod. ignore-taint is the older name of
// startup-taint.
const (
	StartupTaintPrefix = "startup-taint.cluster-autoscaler.kubernetes.io/"
	IgnoreTaintPrefix  = "ignore-taint.cluster-autoscaler.kubernetes.io/"
	StatusTaintPrefix  = "status-taint.cluster-autoscaler.kubernetes.io/"
)

// ReadinessOptions say which taints mark a node as starting and which are
// informational.
type ReadinessOptions struct {
	// StartupTaints are taint keys put on a node while it starts and taken
	// off once it is ready (--startup-taint, repeatable, added to the
	// built-in ones: the node lifecycle controller's and the cloud
	// controllers' start-up taints). Keys with StartupTaintPrefix or
	// IgnoreTaintPrefix always count.
	StartupTaints []string
	// StartupTaintPrefixes are more key prefixes of start-up taints
	// (--startup-taint-prefix, repeatable).
	StartupTaintPrefixes []string
	// StatusTaints are taint keys that only report a state (--status-taint,
	// repeatable); keys with StatusTaintPrefix always count.
	StatusTaints []string
}

// builtinStartupTaint: the node lifecycle controller and cloud controllers
// put these on nodes while they start, and take them off once they are
// ready.
func builtinStartupTaint(key string) bool {
	switch key {
	case v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeNetworkUnavailable,
		"node.cloudprovider.kubernetes.io/uninitialized":
		return true
	}
	return false
}

// DefaultReadiness has no taints beyond the built-in ones and the prefixes.
func DefaultReadiness() ReadinessOptions { return ReadinessOptions{} }

// IsStartupTaint reports whether a taint key marks a starting node.
func (o ReadinessOptions) IsStartupTaint(key string) bool {
	if strings.HasPrefix(key, StartupTaintPrefix) || strings.HasPrefix(key, IgnoreTaintPrefix) || builtinStartupTaint(key) {
		return true
	}
	for _, k := range o.StartupTaints {
		if k == key {
			return true
		}
	}
	for _, p := range o.StartupTaintPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// IsStatusTaint reports whether a taint key only reports a state.
func (o ReadinessOptions) IsStatusTaint(key string) bool {
	if strings.HasPrefix(key, StatusTaintPrefix) {
		return true
	}
	for _, k := range o.StatusTaints {
		if k == key {
			return true
		}
	}
	return false
}

// HasStartupTaint reports whether the node carries a start-up taint.
func (o ReadinessOptions) HasStartupTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if o.IsStartupTaint(t.Key) {
			return true
		}
	}
	return false
}

// Ignorable reports whether a simulation should drop the taint from a
// node: start-up taints come off soon and status taints never block.
func (o ReadinessOptions) Ignorable(key string) bool {
	return o.IsStartupTaint(key) || o.IsStatusTaint(key)
}

// NodeState is a registered node's readiness.
type NodeState uint8

// Node states.
const (
	// NodeReady: Ready, no start-up taint, accelerators advertised.
	NodeReady NodeState = iota
	// NodeStarting: not Ready or tainted for start-up, within
	// MaxNodeStartupTime of its creation; it counts as upcoming.
	NodeStarting
	// NodeAwaitingDevices: ready but its template's accelerators are not
	// advertised yet, within MaxNodeStartupTime; it counts as upcoming.
	NodeAwaitingDevices
	// NodeUnready: not Ready past its start-up time.
	NodeUnready
	// NodeDevicesOverdue: Ready past its start-up time but its template's
	// accelerators never showed; reported, no longer upcoming.
	NodeDevicesOverdue
)

// Schedulable tells whether a node in this state runs pods now: Ready
// with no start-up taint, whether or not its accelerators are all there.
func (n NodeState) Schedulable() bool {
	return n == NodeReady || n == NodeAwaitingDevices || n == NodeDevicesOverdue
}

// AwaitingDevices tells whether a node in this state runs pods but lacks
// accelerators its group's template promises.
func (n NodeState) AwaitingDevices() bool {
	return n == NodeAwaitingDevices || n == NodeDevicesOverdue
}

// Classify says how ready a registered node of group g in snap is at now.
func (s *State) Classify(snap *snapshot.Snapshot, ni *snapshot.NodeInfo, g *snapshot.NodeGroup, now time.Time) NodeState {
	return Classify(s.opts, snap, ni, g, now)
}

// Classifier says how ready a node of the loop's snapshot is. It is the
// loop's one definition of a ready node, handed to every planner.
type Classifier func(ni *snapshot.NodeInfo, g *snapshot.NodeGroup) NodeState

// Classifier classifies the nodes of snap at now as Classify does.
func (s *State) Classifier(snap *snapshot.Snapshot, now time.Time) Classifier {
	return func(ni *snapshot.NodeInfo, g *snapshot.NodeGroup) NodeState {
		return Classify(s.opts, snap, ni, g, now)
	}
}

// Known answers from states, what c said of nodes when the loop began,
// and asks c only of nodes added since (or replaced: a replaced node is a
// new NodeInfo), so that one loop classifies each node once however many
// planners ask. The answer stands while the node and its group's template
// are the ones classified; nodes of groups whose templates publish
// resource slices are always asked again, since a planner may publish
// slices in its fork.
func (c Classifier) Known(nodes []*snapshot.NodeInfo, groups []*snapshot.NodeGroup, states []NodeState) Classifier {
	type knownState struct {
		state    NodeState
		template *v1.Node
	}
	known := make(map[*snapshot.NodeInfo]knownState, len(nodes))
	for i, ni := range nodes {
		if g := groups[i]; g == nil || len(g.TemplateSlices) == 0 {
			known[ni] = knownState{states[i], templateOf(g)}
		}
	}
	return func(ni *snapshot.NodeInfo, g *snapshot.NodeGroup) NodeState {
		if k, ok := known[ni]; ok && k.template == templateOf(g) && (g == nil || len(g.TemplateSlices) == 0) {
			return k.state
		}
		return c(ni, g)
	}
}

func templateOf(g *snapshot.NodeGroup) *v1.Node {
	if g == nil {
		return nil
	}
	return g.Template
}

// State says how ready ni, of group g, is: as c says, or, for a nil c (a
// planner used without a loop), as Classify says with the default options.
func (c Classifier) State(snap *snapshot.Snapshot, now time.Time, ni *snapshot.NodeInfo, g *snapshot.NodeGroup) NodeState {
	if c == nil {
		return Classify(DefaultOptions(), snap, ni, g, now)
	}
	return c(ni, g)
}

// Classify says how ready a registered node of group g in snap is at now,
// with opts' start-up taints and --max-node-startup-time: Ready (the Ready
// condition, network available) with no start-up taint is schedulable;
// within the start-up time a node that is not is still starting, and one
// whose group's accelerators are not all advertised awaits them.
func Classify(opts Options, snap *snapshot.Snapshot, ni *snapshot.NodeInfo, g *snapshot.NodeGroup, now time.Time) NodeState {
	ready := IsReady(ni.Node) && !opts.Readiness.HasStartupTaint(ni.Node)
	awaiting := AwaitingDevices(snap, ni, g)
	if ready && !awaiting {
		return NodeReady
	}
	young := now.Sub(ni.Node.CreationTimestamp.Time) < opts.MaxNodeStartupTime
	switch {
	case young && !ready:
		return NodeStarting
	case young:
		return NodeAwaitingDevices
	case !ready:
		return NodeUnready
	}
	return NodeDevicesOverdue
}

// Starting lists registered nodes of groups with a template that are still
// starting (NodeStarting): they count as upcoming and are simulated as
// their template would be once started. Overdue lists those whose
// accelerators never showed (NodeDevicesOverdue).
// A nil c classifies as s does.
func (s *State) Starting(snap *snapshot.Snapshot, now time.Time, c Classifier) (starting, overdue []*snapshot.NodeInfo) {
	if c == nil {
		c = s.Classifier(snap, now)
	}
	for _, ni := range snap.Nodes() {
		g := snap.NodeGroup(ni.Group)
		if g == nil || g.Template == nil {
			continue
		}
		switch c(ni, g) {
		case NodeStarting, NodeAwaitingDevices:
			starting = append(starting, ni)
		case NodeDevicesOverdue:
			overdue = append(overdue, ni)
		}
	}
	return starting, overdue
}

// AwaitingDevices: the node, of group g, has not shown every accelerator
// g's template promises yet: device-plugin resources missing or short
// (none yet, MIG partitions or time-sliced replicas not made), or DRA
// devices its drivers have not published. One test for every planner.
func AwaitingDevices(snap *snapshot.Snapshot, ni *snapshot.NodeInfo, g *snapshot.NodeGroup) bool {
	return g != nil && g.Template != nil &&
		(gpu.AwaitingTemplate(ni.Node, g.Template) || dra.AwaitingSlices(snap, g, ni.Name()))
}

// IsReady reports the node's Ready condition; a node whose network is
// reported unavailable is not ready either.
func IsReady(node *v1.Node) bool {
	ready := false
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		switch c.Type {
		case v1.NodeReady:
			ready = c.Status == v1.ConditionTrue
		case v1.NodeNetworkUnavailable:
			if c.Status == v1.ConditionTrue {
				return false
			}
		}
	}
	return ready
}
