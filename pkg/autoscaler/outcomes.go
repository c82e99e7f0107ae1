package autoscaler

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Outcome is what became of an earlier action, or of nodes the cloud was
// asked for; the shell hands outcomes to the next Step, which alone
// changes the loop's state from them.
//
// The concrete types are ScaleUpResult, CreationFailed, RemovalDone,
// RemovalFailed, RemovalAborted and RequestConditionsSet.
type Outcome interface{ outcome() }

// ScaleUpResult says whether a ScaleUp's target change was accepted. At is
// when it was made: a scale-up's provisioning time counts from then.
type ScaleUpResult struct {
	Group string
	Delta int
	At    time.Time
	// Error is the cloud's refusal; "" when accepted.
	Error string
	// Requests are the ScaleUp's ProvisioningRequests.
	Requests []string
	// Queued: the scale-up was a queued request; accepted, it adds no
	// upcoming node until the cloud grants it.
	Queued bool `json:",omitempty"`
}

// CreationFailed reports nodes a group asked for that the cloud will not
// create (out of capacity, over quota, a bad launch template). The group
// is backed off, so the expanders turn to their next choice at once, and
// its target is lowered by Count.
type CreationFailed struct {
	Group string
	Count int
	// Class is the error class (cloudprovider.ErrorOutOfResources,
	// ErrorQuota or ErrorOther); Code and Message are the cloud's own.
	Class, Code, Message string
	// Zone is the zone the cloud named, "" when it named none. An
	// out-of-resources failure backs off, with the group, every group
	// launching the same instance type, spot or not, in that zone (the
	// group's own zone when the cloud named none).
	Zone string
	At   time.Time
}

// RemovalDone: a node of RemoveNodes was drained and deleted at At.
type RemovalDone struct {
	Node, Group string
	At          time.Time
}

// RemovalFailed: a removal stopped at Step (tainting, draining, deleting)
// with Error; the node was untainted. Scale-down then waits
// --scale-down-delay-after-failure.
type RemovalFailed struct {
	Node, Group string
	At          time.Time
	Step, Error string
}

// RemovalAborted: a removal was called off before any pod was evicted,
// because the node's pods changed after the plan (a pod was scheduled onto
// it, or one left) or the node is gone. The node was untainted and is
// judged again next loop; no cooldown follows.
type RemovalAborted struct {
	Node, Group string
	At          time.Time
	Reason      string
}

func (ScaleUpResult) outcome()  {}
func (CreationFailed) outcome() {}
func (RemovalDone) outcome()    {}
func (RemovalFailed) outcome()  {}
func (RemovalAborted) outcome() {}

// applyOutcomes changes the state from what happened since the last loop,
// and returns the target decreases failed creations call for.
func (a *Autoscaler) applyOutcomes(s *snapshot.Snapshot, outcomes []Outcome) []DecreaseTarget {
	st := a.state
	var lower []DecreaseTarget
	for _, o := range outcomes {
		switch o := o.(type) {
		case ScaleUpResult:
			switch {
			case o.Error == "" && o.Queued:
				// The cloud raises the target when it grants the request,
				// perhaps hours later: the nodes are upcoming from then
				// on, and the scale-down delay after a scale-up counts
				// from then too.
			case o.Error == "":
				st.RecordScaleUp(o.Group, o.Delta, o.At.Round(0))
			default:
				st.RecordFailure(o.Group, clusterstate.FailureCloudProvider, o.Error, o.At.Round(0))
			}
		case CreationFailed:
			msg := fmt.Sprintf("%d node(s) not created: %s %s", o.Count, o.Code, o.Message)
			st.RecordFailure(o.Group, o.Class, msg, o.At.Round(0))
			if o.Class == ErrorOutOfResources {
				a.markOfferingUnavailable(s, o, msg)
			}
			if o.Count > 0 {
				lower = append(lower, DecreaseTarget{Group: o.Group, Delta: o.Count, Reason: o.Class, Message: msg})
			}
		case RemovalDone:
			st.RecordDeletionDone(o.Node, o.At.Round(0))
		case RemovalFailed:
			st.RecordDeletionFailed(o.Node, o.At.Round(0))
		case RemovalAborted:
			st.RecordDeletionAborted(o.Node)
		case RequestConditionsSet:
			a.applyRequestOutcome(o)
		}
	}
	return lower
}

// ErrorOutOfResources is the CreationFailed class of a cloud out of
// capacity (cloudprovider.ErrorOutOfResources).
const ErrorOutOfResources = "OutOfResources"

// markOfferingUnavailable backs off, until the failed group's backoff
// ends, the other groups that launch the offering the cloud ran out of,
// so the expander's next choice in this very loop is not one that will
// hear the same answer.
func (a *Autoscaler) markOfferingUnavailable(s *snapshot.Snapshot, o CreationFailed, msg string) {
	failed := s.NodeGroup(o.Group)
	b, off := a.state.BackedOff(o.Group, o.At.Round(0))
	if failed == nil || !off {
		return
	}
	want, ok := clusterstate.OfferingOf(failed, o.Zone)
	if !ok {
		return
	}
	why := fmt.Sprintf("%s %s in %s is out of capacity (group %s: %s)", want.InstanceType, capacityKind(want.Spot), want.Zone, o.Group, msg)
	for _, g := range s.NodeGroups() {
		if g.ID == o.Group {
			continue
		}
		if got, ok := clusterstate.OfferingOf(g, ""); ok && got == want {
			a.state.MarkUnavailable(g.ID, b.Until, o.At.Round(0), ErrorOutOfResources, why)
		}
	}
}

func capacityKind(spot bool) string {
	if spot {
		return "spot"
	}
	return "on-demand"
}
