package gce

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// queuedEnv serves a flex-start GPU pool (queuedprovisioning) and an
// on-demand one.
func queuedEnv(t *testing.T) (*testEnv, *Provider, *fakeMIG) {
	t.Helper()
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "gpu", props("a2-highgpu-1g").kubeEnv(gpuKubeEnv).build())
	flex := e.f.addMIG(testProject, testZone, "flex", tmpl, 0)
	e.f.addMIG(testProject, testZone, "ondemand", tmpl, 0)
	cfg, err := ParseConfig([]byte("nodeGroupOptions:\n  flex: {queuedprovisioning: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := e.provider(t, Options{Config: cfg, NodeGroups: []NodeGroupSpec{{Max: 8, URL: migURL("flex")}, {Max: 8, URL: migURL("ondemand")}}})
	refresh(t, p)
	return e, p, flex
}

func queuedOf(t *testing.T, p *Provider, id string) []snapshot.QueuedRequest {
	t.Helper()
	for _, g := range p.NodeGroups() {
		if g.ID == id {
			return g.Queued
		}
	}
	t.Fatalf("no group %s", id)
	return nil
}

// A queued request becomes one resize request with the run duration, shows
// as waiting at once, and follows Compute Engine's answer: the target grows
// by the whole count when it is granted; a failure carries its error.
func TestQueuedRequestIsAResizeRequest(t *testing.T) {
	e, p, flex := queuedEnv(t)
	ctx := context.Background()
	if err := p.RequestQueued(ctx, migURL("flex"), "pr-1234", 3, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	calls := e.f.callsOf("insertResizeRequest")
	if len(calls) != 1 {
		t.Fatalf("%d resize-request inserts, want 1", len(calls))
	}
	var sent compute.InstanceGroupManagerResizeRequest
	if err := json.Unmarshal([]byte(calls[0].Body), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Name != "pr-1234" || sent.ResizeBy != 3 || sent.RequestedRunDuration == nil || sent.RequestedRunDuration.Seconds != 7200 {
		t.Errorf("sent %s", calls[0].Body)
	}
	if calls[0].Query.Get("requestId") == "" {
		t.Error("the insert carries no requestId: a retried one could be applied twice")
	}
	want := []snapshot.QueuedRequest{{Name: "pr-1234", Count: 3, State: snapshot.QueuedWaiting}}
	if got := queuedOf(t, p, migURL("flex")); len(got) != 1 || got[0] != want[0] {
		t.Errorf("before a refresh: queued %+v, want %+v", got, want)
	}
	// Asked again (a restart): the same name is not an error, and no
	// second request is made.
	if err := p.RequestQueued(ctx, migURL("flex"), "pr-1234", 3, 2*time.Hour); err != nil {
		t.Errorf("asking again: %v", err)
	}
	if n := len(flex.resizeRequests); n != 1 {
		t.Errorf("%d resize requests after asking twice, want 1", n)
	}

	flex.grant("pr-1234")
	e.clock.Step(time.Minute)
	refresh(t, p)
	if got := queuedOf(t, p, migURL("flex")); len(got) != 1 || got[0].State != snapshot.QueuedProvisioned {
		t.Errorf("granted: queued %+v", got)
	}
	for _, g := range p.NodeGroups() {
		if g.ID == migURL("flex") && g.TargetSize != 3 {
			t.Errorf("granted: target %d, want 3", g.TargetSize)
		}
	}

	if err := p.RequestQueued(ctx, migURL("flex"), "pr-5678", 2, 0); err != nil {
		t.Fatal(err)
	}
	rr := flex.resizeRequest("pr-5678")
	rr.State = "FAILED"
	rr.Status = &compute.InstanceGroupManagerResizeRequestStatus{Error: &compute.InstanceGroupManagerResizeRequestStatusError{
		Errors: []*compute.InstanceGroupManagerResizeRequestStatusErrorErrors{{Code: "ZONE_RESOURCE_POOL_EXHAUSTED", Message: "no a2 capacity"}}}}
	e.clock.Step(time.Minute)
	refresh(t, p)
	got := queuedOf(t, p, migURL("flex"))
	if len(got) != 2 || got[1].Name != "pr-5678" || got[1].State != snapshot.QueuedFailed ||
		!strings.Contains(got[1].Message, "ZONE_RESOURCE_POOL_EXHAUSTED: no a2 capacity") {
		t.Errorf("failed: queued %+v", got)
	}
}

// Only a group with queued provisioning takes a queued request, and only
// within its max; the refusal names the group and the option.
func TestQueuedRequestNeedsAQueuedGroup(t *testing.T) {
	e, p, _ := queuedEnv(t)
	err := p.RequestQueued(context.Background(), migURL("ondemand"), "pr-1", 1, 0)
	if err == nil || !strings.Contains(err.Error(), cloudprovider.OptionQueuedProvisioning) || !strings.Contains(err.Error(), "ondemand") {
		t.Errorf("on-demand group: err %v", err)
	}
	if err := p.RequestQueued(context.Background(), migURL("flex"), "pr-2", 9, 0); err == nil || !strings.Contains(err.Error(), "max 8") {
		t.Errorf("above max: err %v", err)
	}
	if n := len(e.f.callsOf("insertResizeRequest")); n != 0 {
		t.Errorf("%d resize requests made for refused asks", n)
	}
	if n := len(e.f.callsOf("listResizeRequests")); n != 1 {
		t.Errorf("resize requests listed %d times in one refresh, want once (the queued group only)", n)
	}
}
