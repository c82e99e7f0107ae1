package aws

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

const blockID = "cr-0a1b2c3d4e5f60718"

// blockFake serves gpu-block, a p5 group at zero launched from lt-0blk,
// whose template targets a capacity block by the given target, and the
// block's reservation.
func blockFake(t *testing.T, lt fakeLT, r fakeReservation, groupTags ...string) *fakeAWS {
	g := fakeASG{
		Name: "gpu-block", MinSize: 0, MaxSize: 2, AvailabilityZones: []string{"us-east-1a"},
		LaunchTemplate: &fakeLTSpec{LaunchTemplateId: "lt-0blk"},
		Tags:           tags("gpu-block", append([]string{tagEnabled, "true", tagCluster, "owned"}, groupTags...)...),
	}
	f := standardFake(t, g)
	lt.ID, lt.Name, lt.Version, lt.Default, lt.InstanceType = "lt-0blk", "gpu-block", 1, true, "p5.48xlarge"
	f.lts = append(f.lts, lt)
	if r.ID != "" {
		f.reservations[r.ID] = r
	}
	return f
}

func activeBlock(end string) fakeReservation {
	return fakeReservation{ID: blockID, InstanceType: "p5.48xlarge", Zone: "us-east-1a", State: "active",
		Type: "capacity-block", Start: "2026-01-01T11:30:00.000Z", End: end, Total: 2}
}

func blockEndOf(t *testing.T, p testProvider) *time.Time {
	t.Helper()
	o := groupByID(t, p.NodeGroups(), "gpu-block").Options
	if o == nil {
		return nil
	}
	return o.CapacityBlockEnd
}

func wantBlockEnd(t *testing.T, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Errorf("capacity block end %v, want %s", got, want.Format(time.RFC3339))
	}
}

func problemMentionsAll(p testProvider, parts ...string) bool {
	for _, err := range p.Problems() {
		ok := true
		for _, s := range parts {
			ok = ok && strings.Contains(err.Error(), s)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestCapacityBlockEndIsReadFromTheReservation(t *testing.T) {
	f := blockFake(t, fakeLT{BlockID: blockID}, activeBlock("2026-01-03T11:30:00.000Z"))
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	wantBlockEnd(t, blockEndOf(t, p), time.Date(2026, 1, 3, 11, 30, 0, 0, time.UTC))
	if len(p.Problems()) != 0 {
		t.Errorf("problems %v", p.Problems())
	}
	wantCalls(t, f, "DescribeCapacityReservations", url.Values{"CapacityReservationId.1": {blockID}})
	// Groups not launched into a block have no end and cause no call.
	for _, g := range p.NodeGroups() {
		if g.ID != "gpu-block" && g.Options != nil && g.Options.CapacityBlockEnd != nil {
			t.Errorf("group %s has a block end %v", g.ID, g.Options.CapacityBlockEnd)
		}
	}
}

func TestCapacityBlockEndTagWinsOverTheReservation(t *testing.T) {
	f := blockFake(t, fakeLT{BlockID: blockID}, activeBlock("2026-01-03T11:30:00.000Z"),
		TagAutoscalingOptions+"capacityblockend", "2026-01-03T10:00:00Z", TagAutoscalingOptions+"reservednodes", "2")
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	wantBlockEnd(t, blockEndOf(t, p), time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC))
	wantCalls(t, f, "DescribeCapacityReservations")
}

func TestCapacityBlockEndKeepsTheGroupsOtherOptions(t *testing.T) {
	f := blockFake(t, fakeLT{BlockID: blockID}, activeBlock("2026-01-03T11:30:00.000Z"), TagAutoscalingOptions+"reservednodes", "2")
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	o := groupByID(t, p.NodeGroups(), "gpu-block").Options
	if o == nil || o.ReservedNodes == nil || *o.ReservedNodes != 2 {
		t.Fatalf("options %+v: reservednodes lost", o)
	}
	wantBlockEnd(t, o.CapacityBlockEnd, time.Date(2026, 1, 3, 11, 30, 0, 0, time.UTC))
}

func TestCapacityBlockCancelledEndsNow(t *testing.T) {
	r := activeBlock("2026-01-03T11:30:00.000Z")
	r.State = "cancelled"
	f := blockFake(t, fakeLT{BlockID: blockID}, r)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	wantBlockEnd(t, blockEndOf(t, p), t0)
}

func TestCapacityBlockEndOfThePreviousRefreshKeptOverAFailedCall(t *testing.T) {
	f := blockFake(t, fakeLT{BlockID: blockID}, activeBlock("2026-01-03T11:30:00.000Z"))
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	f.mu.Lock()
	f.denied["DescribeCapacityReservations"] = true
	f.mu.Unlock()
	p.clock.Step(DefaultRefreshInterval)
	p.refresh(t)
	wantBlockEnd(t, blockEndOf(t, p), time.Date(2026, 1, 3, 11, 30, 0, 0, time.UTC))
	if !problemMentionsAll(p, "gpu-block", blockID, "AccessDenied", "previous refresh kept") {
		t.Errorf("problems %v: want the failed call named", p.Problems())
	}
}

func TestCapacityBlockNotFoundIsAProblemAndNoEnd(t *testing.T) {
	f := blockFake(t, fakeLT{BlockID: blockID}, fakeReservation{})
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	if got := blockEndOf(t, p); got != nil {
		t.Errorf("block end %v for a reservation EC2 does not know", got)
	}
	if !problemMentionsAll(p, "gpu-block", blockID, "InvalidCapacityReservationId.NotFound", "no end read") {
		t.Errorf("problems %v: want the unknown reservation named", p.Problems())
	}
	if groupByID(t, p.NodeGroups(), "gpu-block").Template == nil {
		t.Error("the group lost its template over its block's end")
	}
}

func TestCapacityBlockByResourceGroupAsksForTheTag(t *testing.T) {
	arn := "arn:aws:resource-groups:us-east-1:123456789012:group/p5-blocks"
	f := blockFake(t, fakeLT{BlockGroupArn: arn}, fakeReservation{})
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	if got := blockEndOf(t, p); got != nil {
		t.Errorf("block end %v", got)
	}
	if !problemMentionsAll(p, "gpu-block", arn, "capacityblockend") {
		t.Errorf("problems %v: want the resource group and the tag named", p.Problems())
	}
	wantCalls(t, f, "DescribeCapacityReservations")
}

// A launch template that targets an On-Demand Capacity Reservation (no
// capacity-block market type) has no block: its instances outlive the
// reservation's end, so nothing is read or drained.
func TestOnDemandCapacityReservationIsNoBlock(t *testing.T) {
	r := activeBlock("2026-01-03T11:30:00.000Z")
	r.Type = "default"
	f := blockFake(t, fakeLT{BlockID: blockID, OnDemandReservation: true}, r)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	if got := blockEndOf(t, p); got != nil {
		t.Errorf("block end %v for an On-Demand Capacity Reservation", got)
	}
	wantCalls(t, f, "DescribeCapacityReservations")
}
