package kwok

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// queuedConfig has a flex-start GPU group whose queue grants requests
// after ten minutes, and an ordinary one.
const queuedConfig = `
provisioningDelay: 30s
queuedProvisioningDelay: 10m
nodeGroups:
- name: flex
  maxSize: 4
  autoscalingOptions: {queuedprovisioning: true}
  template:
    capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
- name: ondemand
  maxSize: 4
  template:
    capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
`

func queuedProvider(t *testing.T, e *env, faults Faults) *Provider {
	t.Helper()
	cfg, err := ParseConfig([]byte(queuedConfig))
	e.must(err)
	p, err := New(Options{Client: e.client, Config: cfg, Namespace: testNamespace, Clock: e.clock, Faults: faults})
	e.must(err)
	e.must(p.Refresh(e.ctx))
	return p
}

func (e *env) queued(group string) []snapshot.QueuedRequest {
	e.t.Helper()
	for _, g := range e.p.NodeGroups() {
		if g.ID == group {
			return g.Queued
		}
	}
	e.t.Fatalf("no group %s", group)
	return nil
}

// A queued request waits in the queue (no node, the target unchanged),
// then gets all its nodes at once; asked again, even by a restarted
// process, it adds nothing.
func TestQueuedRequestIsGrantedWhole(t *testing.T) {
	e := newEnv(t)
	e.p = queuedProvider(t, e, Faults{})
	e.must(e.p.RequestQueued(e.ctx, "flex", "pr-a", 3, time.Hour))
	if got := e.queued("flex"); len(got) != 1 || got[0] != (snapshot.QueuedRequest{Name: "pr-a", Count: 3, State: snapshot.QueuedWaiting}) {
		t.Fatalf("queued %+v", got)
	}
	e.after(9 * time.Minute)
	if n, target := len(e.nodes("flex")), e.target("flex"); n != 0 || target != 0 {
		t.Fatalf("while queued: %d nodes, target %d; want none", n, target)
	}
	e.after(time.Minute)
	if got := e.queued("flex"); got[0].State != snapshot.QueuedProvisioned || e.target("flex") != 3 {
		t.Fatalf("granted: queued %+v, target %d; want provisioned, 3", got, e.target("flex"))
	}
	e.after(30 * time.Second)
	if n := len(e.nodes("flex")); n != 3 {
		t.Fatalf("%d nodes after the provisioning delay, want 3", n)
	}
	e.p = queuedProvider(t, e, Faults{})
	e.must(e.p.RequestQueued(e.ctx, "flex", "pr-a", 3, time.Hour))
	e.after(time.Hour)
	if n := len(e.nodes("flex")); n != 3 {
		t.Errorf("asked again after a restart: %d nodes, want 3", n)
	}
	// The group's max counts the requests still waiting.
	e.must(e.p.RequestQueued(e.ctx, "flex", "pr-b", 1, 0))
	if err := e.p.RequestQueued(e.ctx, "flex", "pr-c", 1, 0); err == nil || !strings.Contains(err.Error(), "maxSize 4") {
		t.Errorf("over max with one waiting: err %v", err)
	}
	if err := e.p.RequestQueued(e.ctx, "ondemand", "pr-d", 1, 0); err == nil || !strings.Contains(err.Error(), "queuedprovisioning") {
		t.Errorf("a group without queued capacity: err %v", err)
	}
}

// A queue out of capacity fails the request when its time comes, with a
// message, and adds no node.
func TestQueuedRequestFailsWithoutCapacity(t *testing.T) {
	e := newEnv(t)
	e.p = queuedProvider(t, e, Faults{OutOfCapacity: func(group, _ string) bool { return group == "flex" }})
	e.must(e.p.RequestQueued(e.ctx, "flex", "pr-a", 2, 0))
	e.after(time.Hour)
	got := e.queued("flex")
	if len(got) != 1 || got[0].State != snapshot.QueuedFailed || !strings.Contains(got[0].Message, "no capacity") {
		t.Fatalf("queued %+v, want failed", got)
	}
	if n, target := len(e.nodes("flex")), e.target("flex"); n != 0 || target != 0 {
		t.Errorf("%d nodes, target %d; want none", n, target)
	}
}
