package aws

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// stuckGroup asked for three instances: one runs (and is a node), the
// others are as given.
func stuckGroup(rest ...fakeInstance) fakeASG {
	g := cpuGroup()
	g.Name, g.MinSize, g.DesiredCapacity = "stuck", 0, 3
	g.Instances = append(running("us-east-1a", "i-0000000000000001a"), rest...)
	g.Tags = tags("stuck", tagEnabled, "true", tagCluster, "owned")
	return g
}

// The core's provisioning-timeout path end to end: a scale-up of two whose
// instances never come is found by clusterstate after
// MaxNodeProvisionTime, and the shrink it returns lowers the desired
// capacity without touching the running instance.
func TestProvisioningTimeoutShrinksANeverLaunchedScaleUp(t *testing.T) {
	g := stuckGroup()
	g.DesiredCapacity = 1
	f := standardFake(t, g)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	ctx := context.Background()
	state := clusterstate.New(clusterstate.DefaultOptions())
	if err := p.IncreaseSize(ctx, "stuck", 2); err != nil {
		t.Fatal(err)
	}
	state.RecordScaleUp("stuck", 2, t0)

	// Auto Scaling cannot launch (no capacity): desired 3, one instance.
	later := t0.Add(16 * time.Minute)
	p.clock.SetTime(later)
	p.refresh(t)
	snap := snapshot.New()
	for _, ng := range p.NodeGroups() {
		if err := snap.SetNodeGroup(ng); err != nil {
			t.Fatal(err)
		}
	}
	n := node("ip-10-0-0-1", "aws:///us-east-1a/i-0000000000000001a")
	grp, _ := p.NodeGroupForNode(n)
	if err := snap.AddNodeInGroup(n, grp); err != nil {
		t.Fatal(err)
	}
	shrinks := state.Update(snap, later).Shrinks
	if len(shrinks) != 1 || shrinks[0].Group != "stuck" || shrinks[0].Delta != 2 {
		t.Fatalf("shrinks %+v, want stuck by 2", shrinks)
	}
	if _, backedOff := state.BackedOff("stuck", later); !backedOff {
		t.Fatal("the group is not backed off, so the expander would pick it again")
	}
	f.resetCalls()
	if err := p.DecreaseTargetSize(ctx, shrinks[0].Group, shrinks[0].Delta); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "SetDesiredCapacity", url.Values{"AutoScalingGroupName": {"stuck"}, "DesiredCapacity": {"1"}, "HonorCooldown": {"false"}})
	wantCalls(t, f, "TerminateInstanceInAutoScalingGroup")
	if got := f.group("stuck"); got.DesiredCapacity != 1 || len(got.Instances) != 1 {
		t.Fatalf("group after the shrink: desired %d, %d instances; want 1, 1", got.DesiredCapacity, len(got.Instances))
	}
	if got := p.NodeGroups()[0].TargetSize; got != 1 {
		t.Fatalf("cached target %d, want 1", got)
	}
}

func TestDecreaseTargetSizeTakesBackPendingInstancesOnly(t *testing.T) {
	f := standardFake(t, stuckGroup(instances("Pending", "us-east-1a", "i-0000000000000002a", "i-0000000000000003a")...))
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	// The running instance is a node; one Pending instance already
	// registered as a node too (a lifecycle hook holds it in Pending).
	for _, id := range []string{"i-0000000000000001a", "i-0000000000000003a"} {
		_, _ = p.NodeGroupForNode(node(id, "aws:///us-east-1a/"+id))
	}
	ctx := context.Background()
	err := p.DecreaseTargetSize(ctx, "stuck", 2)
	if err == nil || !strings.Contains(err.Error(), "0 not launched and 1 pending without a node") {
		t.Fatalf("shrink by 2 with one eligible instance: %v", err)
	}
	wantCalls(t, f, "TerminateInstanceInAutoScalingGroup")
	wantCalls(t, f, "SetDesiredCapacity")

	if err := p.DecreaseTargetSize(ctx, "stuck", 1); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "TerminateInstanceInAutoScalingGroup", url.Values{"InstanceId": {"i-0000000000000002a"}, "ShouldDecrementDesiredCapacity": {"true"}})
	got := f.group("stuck")
	var left []string
	for _, i := range got.Instances {
		left = append(left, i.InstanceId)
	}
	if got.DesiredCapacity != 2 || strings.Join(left, ",") != "i-0000000000000001a,i-0000000000000003a" {
		t.Fatalf("after the shrink: desired %d, instances %v", got.DesiredCapacity, left)
	}
}

func TestDecreaseTargetSizeUsesNotLaunchedCapacityFirst(t *testing.T) {
	g := stuckGroup(instances("Pending", "us-east-1a", "i-0000000000000002a")...)
	g.DesiredCapacity = 4 // one running, one pending, two never launched
	f := standardFake(t, g)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	if err := p.DecreaseTargetSize(context.Background(), "stuck", 3); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.actions()[len(f.actions())-2:], ","); got != "SetDesiredCapacity,TerminateInstanceInAutoScalingGroup" {
		t.Fatalf("last calls %s", got)
	}
	wantCalls(t, f, "SetDesiredCapacity", url.Values{"AutoScalingGroupName": {"stuck"}, "DesiredCapacity": {"2"}, "HonorCooldown": {"false"}})
	if got := f.group("stuck"); got.DesiredCapacity != 1 || len(got.Instances) != 1 || got.Instances[0].InstanceId != "i-0000000000000001a" {
		t.Fatalf("after the shrink: %+v", got)
	}
}

func TestDecreaseTargetSizeRefusals(t *testing.T) {
	f := standardFake(t, stuckGroup())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll(), Groups: []GroupSpec{{Name: "stuck", MinSize: 2, MaxSize: 5}}})
	p.refresh(t)
	ctx := context.Background()
	for delta, want := range map[int]string{0: "must be positive", 2: "below minSize 2", 3: "the other 1 instance(s) are running"} {
		if err := p.DecreaseTargetSize(ctx, "stuck", delta); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("delta %d: %v, want %q", delta, err, want)
		}
	}
	wantCalls(t, f, "SetDesiredCapacity")
	f.mu.Lock()
	delete(f.groups, "stuck")
	f.mu.Unlock()
	if err := p.DecreaseTargetSize(ctx, "stuck", 1); err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("deleted group: %v", err)
	}
}
