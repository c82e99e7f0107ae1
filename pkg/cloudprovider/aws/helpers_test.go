package aws

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	tagEnabled = "k8s.io/cluster-autoscaler/enabled"
	tagCluster = "k8s.io/cluster-autoscaler/prod"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func tags(group string, kv ...string) []fakeTag {
	var out []fakeTag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fakeTag{Key: kv[i], Value: kv[i+1], ResourceId: group, ResourceType: "auto-scaling-group", PropagateAtLaunch: true})
	}
	return out
}

func running(zone string, ids ...string) []fakeInstance {
	return instances("InService", zone, ids...)
}

func instances(state, zone string, ids ...string) []fakeInstance {
	var out []fakeInstance
	for _, id := range ids {
		out = append(out, fakeInstance{InstanceId: id, AvailabilityZone: zone, LifecycleState: state, HealthStatus: "Healthy"})
	}
	return out
}

// g5Group is a GPU group at zero, discovered by tags, launched from a
// launch template of g5.xlarge.
func g5Group() fakeASG {
	return fakeASG{
		Name: "gpu-g5", MinSize: 0, MaxSize: 10, AvailabilityZones: []string{"us-east-1b"},
		LaunchTemplate: &fakeLTSpec{LaunchTemplateId: "lt-0g5", Version: "$Latest"},
		Tags:           tags("gpu-g5", tagEnabled, "true", tagCluster, "owned"),
	}
}

// cpuGroup has two running instances from a launch configuration.
func cpuGroup() fakeASG {
	return fakeASG{
		Name: "cpu-m5", MinSize: 1, MaxSize: 5, DesiredCapacity: 2, AvailabilityZones: []string{"us-east-1a"},
		Instances:               running("us-east-1a", "i-0000000000000000a", "i-0000000000000000b"),
		LaunchConfigurationName: "lc-m5",
		Tags:                    tags("cpu-m5", tagEnabled, "true", tagCluster, "owned"),
	}
}

func standardFake(t *testing.T, groups ...fakeASG) *fakeAWS {
	f := newFakeAWS(t, groups...)
	f.lts = []fakeLT{
		{ID: "lt-0g5", Name: "gpu-g5", Version: 1, InstanceType: "g5.2xlarge", VolumeGiB: 50},
		{ID: "lt-0g5", Name: "gpu-g5", Version: 2, Default: true, InstanceType: "g5.xlarge", VolumeGiB: 100},
		{ID: "lt-0p4d", Name: "gpu-p4d", Version: 1, Default: true, InstanceType: "m5.large", VolumeGiB: 500},
		{ID: "lt-0none", Name: "no-type", Version: 1, Default: true},
	}
	f.lcs["lc-m5"] = fakeLC{Name: "lc-m5", InstanceType: "m5.large", VolumeGiB: 20}
	return f
}

func discoverAll() []map[string]string {
	return []map[string]string{{tagEnabled: "", tagCluster: ""}}
}

type testProvider struct {
	*Provider
	clock *clocktesting.FakeClock
}

func newTestProvider(t *testing.T, f *fakeAWS, opts Options) testProvider {
	t.Helper()
	as, e := f.clients()
	clk := clocktesting.NewFakeClock(t0)
	opts.AutoScaling, opts.EC2, opts.Clock = as, e, clk
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return testProvider{p, clk}
}

func (tp testProvider) refresh(t *testing.T) {
	t.Helper()
	if err := tp.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func wantCalls(t *testing.T, f *fakeAWS, action string, want ...url.Values) {
	t.Helper()
	got := f.callsOf(action)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s calls:\n got %v\nwant %v", action, got, want)
	}
}
