package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// queuedWorld has an on-demand GPU group and a flex-start one (queued
// provisioning) with the same nodes; queued lists the flex-start group's
// requests as the cloud shows them.
func queuedWorld(t *testing.T, queued ...snapshot.QueuedRequest) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	yes := true
	flex := builder.NodeGroup("flex").Max(10).Template(gpu8("flex-t")).Build()
	flex.Options = &snapshot.GroupOptions{QueuedProvisioning: &yes}
	flex.Queued = queued
	for _, g := range []snapshot.NodeGroup{builder.NodeGroup("ondemand").Max(10).Template(gpu8("od-t")).Build(), flex} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// waiting is req as the loop that asked the cloud's queue left it.
func waiting(req pr.Request, at time.Time) pr.Request {
	r := req.DeepCopy()
	stamp := metav1.NewTime(at)
	r.Status.Conditions = []metav1.Condition{
		{Type: pr.Accepted, Status: metav1.ConditionTrue, Reason: pr.ReasonAccepted, LastTransitionTime: stamp},
		{Type: pr.Provisioned, Status: metav1.ConditionFalse, Reason: pr.ReasonCapacityIsQueued, LastTransitionTime: stamp},
	}
	return pr.Request{ProvisioningRequest: r, Templates: req.Templates}
}

// A queued request asks the flex-start group's queue for all its nodes at
// once, named after the request and with its run duration; ordinary
// pending pods never grow that group.
func TestQueuedRequestAsksTheQueue(t *testing.T) {
	a := newAutoscaler(t, withProvReqs)
	req := request("train", pr.ClassQueuedProvisioning, 2, trainer("x"))
	req.Spec.Parameters = map[string]string{pr.ParamMaxRunDurationSeconds: "3600"}
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: queuedWorld(t),
		ProvisioningRequests: []pr.Request{req}})
	if got := only(plan, "scale-up"); got != "scale-up flex+2" {
		t.Fatalf("scale-ups %q, want flex+2", got)
	}
	su := plan.Actions[0].(autoscaler.ScaleUp)
	if su.Queued == nil || su.Queued.Name != "pr-uid-train" || su.Queued.RunDuration != time.Hour {
		t.Errorf("queued request %+v, want pr-uid-train for 1h", su.Queued)
	}
	got, cs := conditionsOf(plan, "default/train")
	if got != "Accepted=True/Accepted Provisioned=False/CapacityIsQueued" {
		t.Errorf("conditions %q", got)
	}
	if msg := find(cs, pr.Provisioned).Message; !strings.Contains(msg, "pr-uid-train") || !strings.Contains(msg, "flex") {
		t.Errorf("message %q does not name the queued request and its group", msg)
	}

	// An ordinary GPU pod grows the on-demand group, never the flex one.
	plan = step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: queuedWorld(t),
		Pending: []*v1.Pod{trainer("loose")}})
	if got := only(plan, "scale-up"); got != "scale-up ondemand+1" {
		t.Errorf("an ordinary pod: scale-ups %q, want ondemand+1", got)
	}
}

// A waiting request follows the cloud's answer: nothing while the cloud
// waits, Provisioned when it grants the nodes, Failed with the cloud's
// message when it fails, and asked again when its request is gone.
func TestQueuedRequestFollowsTheCloud(t *testing.T) {
	req := waiting(request("train", pr.ClassQueuedProvisioning, 2, trainer("x")), t0.Add(time.Minute))
	q := func(st snapshot.QueuedState) snapshot.QueuedRequest {
		return snapshot.QueuedRequest{Name: "pr-uid-train", Count: 2, State: st, Message: "ZONE_RESOURCE_POOL_EXHAUSTED"}
	}
	for _, tc := range []struct {
		name    string
		queued  []snapshot.QueuedRequest
		conds   string
		scaleUp string
	}{
		{"waiting", []snapshot.QueuedRequest{q(snapshot.QueuedWaiting)}, "", ""},
		{"granted", []snapshot.QueuedRequest{q(snapshot.QueuedProvisioned)}, "Provisioned=True/CapacityIsProvisioned", ""},
		{"failed", []snapshot.QueuedRequest{q(snapshot.QueuedFailed)}, "Failed=True/QueuedRequestFailed", ""},
		{"lost", nil, "Provisioned=False/CapacityIsQueued", "scale-up flex+2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(2 * time.Hour),
				Snapshot: queuedWorld(t, tc.queued...), ProvisioningRequests: []pr.Request{req}})
			got, cs := conditionsOf(plan, "default/train")
			if got != tc.conds {
				t.Errorf("conditions %q, want %q", got, tc.conds)
			}
			if tc.name == "failed" && !strings.Contains(find(cs, pr.Failed).Message, "ZONE_RESOURCE_POOL_EXHAUSTED") {
				t.Errorf("failure %q does not carry the cloud's message", find(cs, pr.Failed).Message)
			}
			if got := only(plan, "scale-up"); got != tc.scaleUp {
				t.Errorf("scale-ups %q, want %q", got, tc.scaleUp)
			}
		})
	}
}

// A run duration that cannot be served fails the request, naming it.
func TestQueuedRequestWithABadRunDurationFails(t *testing.T) {
	req := request("train", pr.ClassQueuedProvisioning, 1, trainer("x"))
	req.Spec.Parameters = map[string]string{pr.ParamMaxRunDurationSeconds: "ten days"}
	plan := step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: queuedWorld(t),
		ProvisioningRequests: []pr.Request{req}})
	got, cs := conditionsOf(plan, "default/train")
	if got != "Failed=True/InvalidParameters" || !strings.Contains(find(cs, pr.Failed).Message, `maxRunDurationSeconds="ten days"`) {
		t.Errorf("conditions %q %q", got, find(cs, pr.Failed).Message)
	}
	if got := only(plan, "scale-up"); got != "" {
		t.Errorf("scaled up %q", got)
	}
}
