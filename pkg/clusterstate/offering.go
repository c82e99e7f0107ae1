package clusterstate

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// An out-of-capacity answer is about an offering, not a group: the cloud
// has no more of one instance type, bought one way, in one zone. Every
// group that launches the same offering will hear the same answer, so the
// loop backs them off together (Karpenter caches an unavailable offering
// the same way) instead of finding out one group and one loop at a time.

// Offering is what a cloud runs out of: an instance type in a zone, spot
// or not.
type Offering struct {
	InstanceType, Zone string
	Spot               bool
}

// OfferingOf is the offering a group launches; zone, when not "", is the
// zone the cloud named in its answer and overrides the template's (a group
// spanning zones has none of its own). ok is false when the instance type
// or the zone is unknown: then no other group can be said to share it.
func OfferingOf(g *snapshot.NodeGroup, zone string) (Offering, bool) {
	o := Offering{InstanceType: g.InstanceType, Zone: zone, Spot: g.Spot}
	if g.Template != nil {
		if o.InstanceType == "" {
			o.InstanceType = g.Template.Labels[v1.LabelInstanceTypeStable]
		}
		if o.Zone == "" {
			o.Zone = g.Template.Labels[v1.LabelTopologyZone]
		}
	}
	return o, o.InstanceType != "" && o.Zone != ""
}

// MarkUnavailable backs a group off until the time given because an
// offering it launches ran out elsewhere. It is not the group's own
// failure: its scale-up in flight stays, and its own backoff step (what
// its next failure doubles) is kept. A backoff already in force that ends
// later is left as it is.
func (s *State) MarkUnavailable(group string, until, now time.Time, reason, message string) {
	b, had := s.backoffs[group]
	if had && !until.After(b.Until) {
		return
	}
	if !had || now.Sub(b.LastFailure) > s.opts.Backoff.Reset {
		// A group with no failure of its own starts its step over when it
		// next fails; the record is dated now so it is not forgotten as
		// stale before it ends.
		b = Backoff{LastFailure: now}
	}
	b.Until, b.Reason, b.Message = until, reason, message
	s.backoffs[group] = b
}
