package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// blockTarget is the capacity block a launch template launches into: the
// market type capacity-block with a target reservation, by id or by a
// resource group of reservations.
type blockTarget struct {
	reservationID, resourceGroupArn string
}

func (b blockTarget) set() bool { return b.reservationID != "" || b.resourceGroupArn != "" }

// blockTargetOf reads the launch template's capacity reservation setting;
// a target without the capacity-block market type is an On-Demand Capacity
// Reservation, whose instances outlive its end as on-demand ones, so it is
// no block.
func blockTargetOf(data *ec2types.ResponseLaunchTemplateData) blockTarget {
	mo, spec := data.InstanceMarketOptions, data.CapacityReservationSpecification
	if mo == nil || mo.MarketType != ec2types.MarketTypeCapacityBlock || spec == nil || spec.CapacityReservationTarget == nil {
		return blockTarget{}
	}
	t := spec.CapacityReservationTarget
	return blockTarget{reservationID: ptr.Deref(t.CapacityReservationId, ""), resourceGroupArn: ptr.Deref(t.CapacityReservationResourceGroupArn, "")}
}

// blockGone are the reservation states in which a block runs no instance
// any more: its end is then no later than now.
var blockGone = map[ec2types.CapacityReservationState]bool{
	ec2types.CapacityReservationStateExpired: true, ec2types.CapacityReservationStateCancelled: true,
	ec2types.CapacityReservationStateCancelling: true, ec2types.CapacityReservationStateFailed: true,
	ec2types.CapacityReservationStatePaymentFailed: true, ec2types.CapacityReservationStateUnavailable: true,
}

// addCapacityBlockEnds reads the end of each group's capacity block from
// EC2 (DescribeCapacityReservations, one call per block) and makes it the
// group's capacityblockend, unless the operator set that option: the tag
// wins, and the block is then not looked up. A call that fails keeps the end read at the previous refresh.
func (p *Provider) addCapacityBlockEnds(ctx context.Context, groups map[string]*group) []error {
	ends := map[string]time.Time{}
	errs := map[string]error{}
	var problems []error
	for _, name := range sortedKeys(groups) {
		g := groups[name]
		if !g.block.set() || (g.options != nil && g.options.CapacityBlockEnd != nil) {
			continue // no block, or the operator's end, which wins
		}
		if g.block.reservationID == "" {
			problems = append(problems, fmt.Errorf("aws: node group %s: launch template targets capacity reservation resource group %s: the capacity block's end is read only for a target reservation id; set the tag %s%s",
				name, g.block.resourceGroupArn, TagAutoscalingOptions, "capacityblockend"))
			continue
		}
		id := g.block.reservationID
		if _, done := ends[id]; !done && errs[id] == nil {
			if end, err := p.describeBlockEnd(ctx, id); err != nil {
				errs[id] = err
			} else {
				ends[id] = end
			}
		}
		if err := errs[id]; err != nil {
			outcome := "no end read"
			if old := p.cached(name); old != nil && old.blockEnd != nil && old.block == g.block {
				g.blockEnd = old.blockEnd
				outcome = "the end of the previous refresh kept"
			}
			problems = append(problems, fmt.Errorf("aws: node group %s: capacity block %s: %w; %s", name, id, err, outcome))
		} else {
			end := ends[id]
			g.blockEnd = &end
		}
		g.applyBlockEnd()
	}
	return problems
}

// applyBlockEnd makes the block's end read from EC2 the group's option
// where the operator has not set one.
func (g *group) applyBlockEnd() {
	if g.blockEnd == nil || (g.options != nil && g.options.CapacityBlockEnd != nil) {
		return
	}
	o := snapshot.GroupOptions{}
	if g.options != nil {
		o = *g.options
	}
	end := *g.blockEnd
	o.CapacityBlockEnd = &end
	g.options = &o
}

// describeBlockEnd is the end of one capacity block: its EndDate, or now
// when the block is already over (expired, cancelled, failed).
func (p *Provider) describeBlockEnd(ctx context.Context, id string) (time.Time, error) {
	out, err := p.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		return time.Time{}, fmt.Errorf("DescribeCapacityReservations: %w", err)
	}
	for _, r := range out.CapacityReservations {
		if ptr.Deref(r.CapacityReservationId, "") != id {
			continue
		}
		if r.EndDate == nil {
			return time.Time{}, fmt.Errorf("DescribeCapacityReservations: reservation %s (state %s) has no endDate", id, r.State)
		}
		end := r.EndDate.UTC()
		if now := p.clock.Now(); blockGone[r.State] && end.After(now) {
			p.log.Warn("aws capacity block is over before its end date", "reservation", id, "state", string(r.State), "endDate", end)
			end = now.UTC()
		}
		return end, nil
	}
	return time.Time{}, errors.New("DescribeCapacityReservations: reservation not in the answer")
}
