package gce

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An endpoint that stops answering fails the call after CallTimeout, for
// a listing as for a resize, instead of holding the caller (the loop)
// until the leader is restarted.
func TestStalledEndpointFailsTheCall(t *testing.T) {
	for _, tc := range []struct {
		kind string
		call func(*Provider) error
	}{
		{"listManagedInstances", func(p *Provider) error { return p.Refresh(context.Background()) }},
		{"resize", func(p *Provider) error { return p.IncreaseSize(context.Background(), migURL("pool"), 1) }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			e := newEnv(t)
			tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
			e.f.addMIG(testProject, testZone, "pool", tmpl, 1)
			p := e.provider(t, Options{CallTimeout: 50 * time.Millisecond, NodeGroups: []NodeGroupSpec{{Max: 5, URL: migURL("pool")}}})
			refresh(t, p)
			e.clock.Step(DefaultRefreshInterval)
			_, _ = e.f.hold(tc.kind)
			errc := make(chan error, 1)
			go func() { errc <- tc.call(p) }()
			select {
			case err := <-errc:
				// A refresh keeps the last listing of a group it cannot
				// list and logs why; a resize fails.
				if msg := "no answer within the per-call timeout of 50ms"; (err == nil || !strings.Contains(err.Error(), msg)) &&
					!strings.Contains(e.logs.String(), msg) {
					t.Errorf("err = %v, logs %s; want the per-call timeout", err, e.logs)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call is still waiting for the stalled endpoint")
			}
		})
	}
}

// The default per-call timeout applies when none is given, and a negative
// one is refused.
func TestCallTimeoutOption(t *testing.T) {
	e := newEnv(t)
	if p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 1, URL: migURL("pool")}}}); p.api.callTimeout != DefaultCallTimeout {
		t.Errorf("call timeout %s, want the default %s", p.api.callTimeout, DefaultCallTimeout)
	}
	if _, err := New(Options{Service: e.f.service(), CallTimeout: -time.Second,
		NodeGroups: []NodeGroupSpec{{Max: 1, URL: migURL("pool")}}}); err == nil || !strings.Contains(err.Error(), "call timeout (-1s)") {
		t.Errorf("New with a negative call timeout: %v", err)
	}
}
