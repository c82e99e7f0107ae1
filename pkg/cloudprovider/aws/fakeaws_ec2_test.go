package aws

import (
	"fmt"
	"net/url"
	"strings"
)

// fakeReservation is an EC2 capacity reservation in the shape
// DescribeCapacityReservations returns it.
type fakeReservation struct {
	ID, InstanceType, Zone, State string
	// Type is "capacity-block" or "default".
	Type       string
	Start, End string
	Total      int
}

// blockTemplateData is the launch template data of a template that
// launches into a capacity block.
func blockTemplateData(lt fakeLT) string {
	target := "<capacityReservationId>" + lt.BlockID + "</capacityReservationId>"
	if lt.BlockGroupArn != "" {
		target = "<capacityReservationResourceGroupArn>" + lt.BlockGroupArn + "</capacityReservationResourceGroupArn>"
	}
	market := "<instanceMarketOptions><marketType>capacity-block</marketType></instanceMarketOptions>"
	if lt.OnDemandReservation {
		market = ""
	}
	return market + "<capacityReservationSpecification><capacityReservationTarget>" + target + "</capacityReservationTarget></capacityReservationSpecification>"
}

// describeCapacityReservations answers by id; like EC2, one unknown id
// fails the whole call.
func (f *fakeAWS) describeCapacityReservations(p url.Values) (string, error) {
	ids := members(p, "CapacityReservationId")
	var b strings.Builder
	b.WriteString("<capacityReservationSet>")
	for _, id := range ids {
		r, ok := f.reservations[id]
		if !ok {
			return "", apiError{"InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)}
		}
		fmt.Fprintf(&b, "<item><capacityReservationId>%s</capacityReservationId><ownerId>123456789012</ownerId>"+
			"<capacityReservationArn>arn:aws:ec2:us-east-1:123456789012:capacity-reservation/%s</capacityReservationArn>"+
			"<instanceType>%s</instanceType><instancePlatform>Linux/UNIX</instancePlatform><availabilityZone>%s</availabilityZone>"+
			"<tenancy>default</tenancy><totalInstanceCount>%d</totalInstanceCount><availableInstanceCount>0</availableInstanceCount>"+
			"<ebsOptimized>true</ebsOptimized><ephemeralStorage>false</ephemeralStorage><state>%s</state>"+
			"<startDate>%s</startDate><endDate>%s</endDate><endDateType>limited</endDateType>"+
			"<instanceMatchCriteria>targeted</instanceMatchCriteria><createDate>%s</createDate><reservationType>%s</reservationType>"+
			"<tagSet/></item>",
			r.ID, r.ID, r.InstanceType, r.Zone, r.Total, r.State, r.Start, r.End, r.Start, r.Type)
	}
	b.WriteString("</capacityReservationSet>")
	return b.String(), nil
}
