package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// An endpoint that stops answering fails the call after CallTimeout, for
// Auto Scaling as for EC2, reads as writes, instead of holding the caller
// (the autoscaling loop) until the leader is restarted.
func TestStalledEndpointFailsTheCall(t *testing.T) {
	for _, tc := range []struct {
		action string
		run    func(p testProvider) error
	}{
		{"DescribeAutoScalingGroups", func(p testProvider) error { return p.Refresh(context.Background()) }},
		{"DescribeLaunchTemplateVersions", func(p testProvider) error { return p.Refresh(context.Background()) }},
		{"SetDesiredCapacity", func(p testProvider) error { return p.IncreaseSize(context.Background(), "gpu-g5", 1) }},
		{"TerminateInstanceInAutoScalingGroup", func(p testProvider) error {
			return p.DeleteNodes(context.Background(), "cpu-m5", []*v1.Node{node("a", "aws:///us-east-1a/i-0000000000000000a")})
		}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			f := standardFake(t, cpuGroup(), g5Group())
			p := newTestProvider(t, f, Options{CallTimeout: 50 * time.Millisecond, AutoDiscovery: discoverAll()})
			if !strings.HasPrefix(tc.action, "Describe") {
				p.refresh(t)
			}
			f.mu.Lock()
			f.stalled[tc.action] = true
			f.mu.Unlock()
			errc := make(chan error, 1)
			go func() { errc <- tc.run(p) }()
			select {
			case err := <-errc:
				// A refresh that cannot read one group's template keeps
				// the group as a problem rather than failing.
				msg := "no answer within the per-call timeout of 50ms"
				if (err == nil || !strings.Contains(err.Error(), msg)) && !problemsMention(p, msg) {
					t.Errorf("err = %v, problems %v; want the per-call timeout", err, p.Problems())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call is still waiting for the stalled endpoint")
			}
		})
	}
}

func problemsMention(p testProvider, msg string) bool {
	for _, err := range p.Problems() {
		if strings.Contains(err.Error(), msg) {
			return true
		}
	}
	return false
}

// A negative call timeout is refused, naming the value.
func TestNegativeCallTimeoutIsRefused(t *testing.T) {
	f := standardFake(t, cpuGroup())
	as, e := f.clients()
	_, err := New(Options{AutoScaling: as, EC2: e, AutoDiscovery: discoverAll(), CallTimeout: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "call timeout must not be negative, got -1s") {
		t.Errorf("New: %v", err)
	}
}
