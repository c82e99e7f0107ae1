package autoscaler

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// A node the cloud is taking away is no longer capacity, whatever its
// conditions say: the loop that first sees the signal plans as if it were
// gone, so its pods' replacement capacity is ordered in that loop (before
// the pods go pending), and hands the shell the node to drain before the
// notice ends. The node's group, and every group launching the same
// offering, is backed off for the initial backoff step: the replacement
// goes to another group or capacity type. Interruptions also make a group
// dearer to the price expander (InterruptionOptions.Penalty).

// InterruptionSignal is a taint by which a node is told it will be taken
// away, and the notice that leaves.
type InterruptionSignal struct {
	TaintKey string
	Notice   time.Duration
}

// InterruptionOptions say how the loop knows and weighs interruptions
// (--interruption-taints, --interruption-rate-window,
// --interruption-penalty).
type InterruptionOptions struct {
	// Signals are the taints that mark a node being taken away; none
	// turns the handling off.
	Signals []InterruptionSignal
	// RateWindow is how far back a group's interruptions count for its
	// rate (1h).
	RateWindow time.Duration
	// Penalty is how many hours of a node's price one interruption costs
	// on top of the price (work lost, the replacement's start): a group
	// with r interruptions per node-hour over RateWindow is priced at
	// price × (1 + r × Penalty). 0 leaves prices alone (default 1).
	Penalty float64
	// CapacityBlockLead is how long before its capacity block ends a
	// group's nodes are drained and the group is no longer grown
	// (--capacity-block-drain-lead, 40m: EC2 warns 40 minutes before a
	// Capacity Block ends and starts terminating its instances 30 minutes
	// before). 0 turns it off.
	CapacityBlockLead time.Duration
}

// Interruption signals known by default, as they reach a cluster.
const (
	// TaintAWSSpotInterruption: the AWS Node Termination Handler saw an EC2
	// spot interruption notice (two minutes).
	TaintAWSSpotInterruption = "aws-node-termination-handler/spot-itn"
	// TaintAWSRebalance: EC2 recommends rebalancing a spot instance at
	// elevated risk of interruption; the interruption, if it comes,
	// follows with its own two minutes.
	TaintAWSRebalance = "aws-node-termination-handler/rebalance-recommendation"
	// TaintAWSASGLifecycle: the Auto Scaling group is terminating the
	// instance (a lifecycle hook holds it).
	TaintAWSASGLifecycle = "aws-node-termination-handler/asg-lifecycle-termination"
	// TaintGKEImpendingTermination: GKE's graceful node shutdown of a spot
	// or preemptible VM (30 seconds).
	TaintGKEImpendingTermination = "cloud.google.com/impending-node-termination"
)

// DefaultInterruption knows the AWS Node Termination Handler's and GKE's
// taints, counts a group's interruptions over an hour, and prices one
// interruption at an hour of the node's price.
func DefaultInterruption() InterruptionOptions {
	return InterruptionOptions{
		Signals: []InterruptionSignal{
			{TaintKey: TaintAWSSpotInterruption, Notice: 2 * time.Minute},
			{TaintKey: TaintAWSRebalance, Notice: 2 * time.Minute},
			{TaintKey: TaintAWSASGLifecycle, Notice: 2 * time.Minute},
			{TaintKey: TaintGKEImpendingTermination, Notice: 30 * time.Second},
		},
		RateWindow:        time.Hour,
		Penalty:           1,
		CapacityBlockLead: 40 * time.Minute,
	}
}

// signalOf is the first signal a node carries, in the options' order.
func (o InterruptionOptions) signalOf(n *v1.Node) (InterruptionSignal, bool) {
	for _, sig := range o.Signals {
		for _, t := range n.Spec.Taints {
			if t.Key == sig.TaintKey {
				return sig, true
			}
		}
	}
	return InterruptionSignal{}, false
}

// EffectivePrice is a group's price with its interruptions priced in:
// price × (1 + r × penalty), r being interruptions per node-hour over the
// window (nodes counted at least 1).
func EffectivePrice(price float64, interruptions, nodes int, window time.Duration, penalty float64) float64 {
	if interruptions == 0 || penalty <= 0 || window <= 0 {
		return price
	}
	rate := float64(interruptions) / (float64(max(nodes, 1)) * window.Hours())
	return price * (1 + rate*penalty)
}

// interrupted takes the nodes being taken away out of the (forked)
// snapshot, adds their pods that a controller will recreate to the
// pending pods, backs off their groups' offerings, prices interruptions
// into the groups, and returns the removals to drain them by the end of
// their notice (none for a node already being removed).
func (l *loop) interrupted(s *snapshot.Snapshot) ([]Action, error) {
	o := l.opts.Interruption
	present := map[string]bool{}
	var removals []disruption.Removal
	var gone []*snapshot.NodeInfo
	for _, ni := range s.Nodes() {
		sig, ok := o.signalOf(ni.Node)
		if !ok || ni.Group == "" {
			continue
		}
		present[ni.Name()] = true
		in := l.state.RecordInterruption(ni.Name(), ni.Group, sig.TaintKey, l.in.Now)
		gone = append(gone, ni)
		l.takenAway = append(l.takenAway, status.Node{Name: ni.Name(), Group: ni.Group, State: status.NodeRemoving,
			Reason: ReasonInterrupted, Message: fmt.Sprintf("the cloud is taking it away (%s): drained by %s, its pods' replacement ordered",
				sig.TaintKey, in.Since.Add(sig.Notice).UTC().Format(time.RFC3339))})
		l.backOffInterrupted(s, ni.Group, in)
		if rm, ok := l.takeAway(ni, sig.TaintKey, in.Since.Add(sig.Notice)); ok {
			removals = append(removals, rm)
		}
	}
	l.state.ForgetInterruptions(present, l.in.Now.Add(-o.RateWindow))
	if err := l.priceInterruptions(s); err != nil {
		return nil, err
	}
	return l.planGone(s, gone, removals)
}

// takeAway is the removal that drains a node the cloud takes back by the
// deadline, every pod but DaemonSet and mirror pods evicted; none for a
// node already being removed.
func (l *loop) takeAway(ni *snapshot.NodeInfo, signal string, deadline time.Time) (disruption.Removal, bool) {
	if l.state.IsDeleting(ni.Name()) {
		return disruption.Removal{}, false
	}
	rm := disruption.Removal{Node: ni.Name(), Group: ni.Group, Interruption: signal, Deadline: deadline}
	for _, pi := range ni.Pods {
		if p := pi.Pod; !drain.IsDaemonSetPod(p) && !drain.IsMirrorPod(p) && p.DeletionTimestamp == nil {
			rm.Evict = append(rm.Evict, disruption.Move{Pod: p})
		}
	}
	rm.Empty = len(rm.Evict) == 0
	l.state.RecordDeletionStarted(clusterstate.Deletion{Node: rm.Node, Group: rm.Group, Drain: !rm.Empty, Since: l.in.Now})
	return rm, true
}

// planGone takes the nodes out of the (forked) snapshot and adds their
// pods that a controller will recreate to the pending pods, so their
// replacement is ordered in this loop; it returns the removals as one
// action.
func (l *loop) planGone(s *snapshot.Snapshot, gone []*snapshot.NodeInfo, removals []disruption.Removal) ([]Action, error) {
	var moved []*v1.Pod
	for _, ni := range gone {
		for _, pi := range ni.Pods {
			if p := pi.Pod; metav1.GetControllerOfNoCopy(p) != nil && !drain.IsDaemonSetPod(p) && !drain.IsMirrorPod(p) {
				c := p.DeepCopy()
				c.Spec.NodeName = ""
				moved = append(moved, c)
			}
		}
		if err := s.RemoveNode(ni.Name()); err != nil {
			return nil, err
		}
	}
	if len(moved) > 0 {
		l.in.Pending = slices.Concat(l.in.Pending, moved)
	}
	if len(removals) == 0 {
		return nil, nil
	}
	return []Action{RemoveNodes{Removals: removals, MaxGracefulTermination: time.Duration(l.opts.ScaleDown.MaxGracefulTerminationSec) * time.Second}}, nil
}

// backOffInterrupted backs off, until the initial backoff step after the
// signal was first seen, the interrupted node's group and the groups that
// launch the same offering (the same spot pool is being reclaimed).
func (l *loop) backOffInterrupted(s *snapshot.Snapshot, group string, in clusterstate.Interruption) {
	until := in.Since.Add(l.opts.ClusterState.Backoff.Initial)
	why := fmt.Sprintf("node %s of group %s is being taken away (%s)", in.Node, group, in.Signal)
	l.state.MarkUnavailable(group, until, l.in.Now, ReasonInterrupted, why)
	g := s.NodeGroup(group)
	if g == nil {
		return
	}
	want, ok := clusterstate.OfferingOf(g, "")
	if !ok {
		return
	}
	for _, other := range s.NodeGroups() {
		if got, ok := clusterstate.OfferingOf(other, ""); ok && got == want && other.ID != group {
			l.state.MarkUnavailable(other.ID, until, l.in.Now, ReasonInterrupted, why)
		}
	}
}

// ReasonInterrupted is the backoff reason of a group whose node, or one of
// whose offering's, is being taken away.
const ReasonInterrupted = "Interrupted"

// priceInterruptions sets, in the forked snapshot, each interrupted
// group's price to its EffectivePrice, so the price expander (and
// consolidation) weigh what interruptions cost.
func (l *loop) priceInterruptions(s *snapshot.Snapshot) error {
	o := l.opts.Interruption
	for _, g := range s.NodeGroups() {
		n := l.state.Interruptions(g.ID)
		if n == 0 || g.PricePerHour == 0 {
			continue
		}
		c := *g
		c.PricePerHour = EffectivePrice(g.PricePerHour, n, len(s.NodesInGroup(g.ID)), o.RateWindow, o.Penalty)
		if err := s.SetNodeGroup(c); err != nil {
			return err
		}
	}
	return nil
}
