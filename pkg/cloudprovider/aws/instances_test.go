package aws

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func (tp testProvider) group(t *testing.T, name string) snapshot.NodeGroup {
	t.Helper()
	for _, g := range tp.NodeGroups() {
		if g.ID == name {
			return g
		}
	}
	t.Fatalf("group %s not served", name)
	return snapshot.NodeGroup{}
}

func (tp testProvider) logTo(b *bytes.Buffer) {
	tp.log = slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// launching is a group of three asked for, one in service, one pending and
// one not launched: the latest launch failed for want of capacity.
func launching() fakeASG {
	g := cpuGroup()
	g.DesiredCapacity = 3
	g.Instances = append(running("us-east-1a", "i-0000000000000000a"),
		append(instances("Pending:Wait", "us-east-1a", "i-0000000000000000c"),
			instances("Terminating", "us-east-1a", "i-0000000000000000d")...)...)
	return g
}

func launchActivities(group string) []fakeActivity {
	return []fakeActivity{
		{ActivityId: "act-3", AutoScalingGroupName: group, StartTime: "2026-01-02T02:58:00Z", StatusCode: "Failed",
			Description:   "Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient m5.large capacity in the Availability Zone you requested (us-east-1a).",
			StatusMessage: "Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient m5.large capacity in the Availability Zone you requested (us-east-1a). Launching EC2 instance failed."},
		{ActivityId: "act-2", AutoScalingGroupName: group, StartTime: "2026-01-02T02:57:00Z", StatusCode: "InProgress",
			Description: "Launching a new EC2 instance: i-0000000000000000c"},
		{ActivityId: "act-1", AutoScalingGroupName: group, StartTime: "2026-01-02T01:00:00Z", StatusCode: "Successful",
			Description: "Launching a new EC2 instance: i-0000000000000000a"},
	}
}

// Instances are listed with the providerID their nodes register with, the
// state their lifecycle says, and the launch time the activities give;
// warm-pool instances are not the group's.
func TestInstancesAreListed(t *testing.T) {
	f := standardFake(t, launching())
	f.activities["cpu-m5"] = launchActivities("cpu-m5")
	f.groups["cpu-m5"].Instances = append(f.groups["cpu-m5"].Instances, instances("Warmed:Stopped", "us-east-1a", "i-0000000000000000e")...)
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	tp.refresh(t)
	g := tp.group(t, "cpu-m5")
	want := []snapshot.Instance{
		{ProviderID: "aws:///us-east-1a/i-0000000000000000a", State: snapshot.InstanceRunning, CreatedAt: time.Date(2026, 1, 2, 1, 0, 0, 0, time.UTC)},
		{ProviderID: "aws:///us-east-1a/i-0000000000000000c", State: snapshot.InstanceCreating, CreatedAt: time.Date(2026, 1, 2, 2, 57, 0, 0, time.UTC)},
		{ProviderID: "aws:///us-east-1a/i-0000000000000000d", State: snapshot.InstanceDeleting},
	}
	if !g.InstancesListed || len(g.Instances) != len(want) {
		t.Fatalf("instances %+v (listed %v), want %+v", g.Instances, g.InstancesListed, want)
	}
	for i := range want {
		if got := g.Instances[i]; got.ProviderID != want[i].ProviderID || got.State != want[i].State || !got.CreatedAt.Equal(want[i].CreatedAt) {
			t.Errorf("instance %d: %+v, want %+v", i, got, want[i])
		}
	}
	// A node registered from an instance carries the same providerID: the
	// core matches them as strings.
	if id, err := InstanceID(g.Instances[0].ProviderID); err != nil || id != "i-0000000000000000a" {
		t.Errorf("providerID does not read back: %q %v", id, err)
	}
}

// A failed launch is reported at the next Refresh, once, for the capacity
// still not launched, with its class, EC2 code and the zone EC2 names.
func TestFailedLaunchIsReportedOnce(t *testing.T) {
	f := standardFake(t, launching())
	f.activities["cpu-m5"] = launchActivities("cpu-m5")
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	tp.refresh(t)
	got := tp.FailedCreations()
	if len(got) != 1 {
		t.Fatalf("failed creations %+v, want one", got)
	}
	want := cloudprovider.FailedCreations{Group: "cpu-m5", Count: 1, Class: cloudprovider.ErrorOutOfResources, Code: "InsufficientInstanceCapacity",
		Zone: "us-east-1a"}
	if got[0].Group != want.Group || got[0].Count != want.Count || got[0].Class != want.Class || got[0].Code != want.Code || got[0].Zone != want.Zone ||
		!strings.Contains(got[0].Message, "do not have sufficient m5.large capacity") {
		t.Errorf("failure %+v, want %+v with EC2's message", got[0], want)
	}
	tp.clock.Step(2 * DefaultRefreshInterval)
	tp.refresh(t)
	if again := tp.FailedCreations(); len(again) != 0 {
		t.Errorf("reported again: %+v", again)
	}
	// A later launch that fails is a new failure.
	f.mu.Lock()
	f.activities["cpu-m5"] = append([]fakeActivity{{ActivityId: "act-4", AutoScalingGroupName: "cpu-m5", StartTime: "2026-01-02T03:01:00Z",
		StatusCode: "Failed", Description: "Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than your current vCPU limit of 32 allows.",
		StatusMessage: "Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than your current vCPU limit of 32 allows."}},
		f.activities["cpu-m5"]...)
	f.mu.Unlock()
	tp.refresh(t)
	if got := tp.FailedCreations(); len(got) != 1 || got[0].Class != cloudprovider.ErrorQuota || got[0].Code != "VcpuLimitExceeded" {
		t.Errorf("second failure %+v, want a quota failure", got)
	}
}

// A failure the group has filled since (capacity came back) is not
// reported, and a group whose latest launch succeeded reports nothing.
func TestFilledGroupReportsNothing(t *testing.T) {
	g := launching()
	g.DesiredCapacity = 2 // the pending instance fills it
	f := standardFake(t, g)
	f.activities["cpu-m5"] = launchActivities("cpu-m5")
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	tp.refresh(t)
	if got := tp.FailedCreations(); len(got) != 0 {
		t.Errorf("failures %+v, want none: nothing is missing", got)
	}
}

// Without the permission: said once at start, never asked again, and no
// failure reported (the provisioning timeout takes over).
func TestScalingActivitiesDenied(t *testing.T) {
	f := standardFake(t, launching(), g5Group())
	f.activities["cpu-m5"] = launchActivities("cpu-m5")
	f.denied["DescribeScalingActivities"] = true
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	var log bytes.Buffer
	tp.logTo(&log)
	for range 3 {
		tp.refresh(t)
		tp.clock.Step(2 * DefaultRefreshInterval)
	}
	if n := len(f.callsOf("DescribeScalingActivities")); n != 1 {
		t.Errorf("DescribeScalingActivities called %d times, want once (the probe)", n)
	}
	if n := strings.Count(log.String(), "may not call"); n != 1 {
		t.Errorf("the missing permission logged %d times, want once:\n%s", n, log.String())
	}
	if got := tp.FailedCreations(); len(got) != 0 {
		t.Errorf("failures %+v without the permission", got)
	}
}

// With the permission, groups with nothing launching are not asked after
// the first probe.
func TestActivitiesReadOnlyWhileLaunching(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	tp.refresh(t)
	f.resetCalls()
	for range 3 {
		tp.clock.Step(2 * DefaultRefreshInterval)
		tp.refresh(t)
	}
	if n := len(f.callsOf("DescribeScalingActivities")); n != 0 {
		t.Errorf("DescribeScalingActivities called %d times for settled groups", n)
	}
}

// autoscaling-options tags become the group's options; a bad one is a
// problem naming the tag, and the group runs on the cluster's options.
func TestAutoscalingOptionsTags(t *testing.T) {
	good := cpuGroup()
	good.Tags = append(good.Tags, tags("cpu-m5", TagAutoscalingOptions+"scaledownunneededtime", "5m",
		TagAutoscalingOptions+"scaledowngpuutilizationthreshold", "0.2")...)
	bad := g5Group()
	bad.Tags = append(bad.Tags, tags("gpu-g5", TagAutoscalingOptions+"scaledownunneededtime", "soon")...)
	f := standardFake(t, good, bad)
	tp := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	tp.refresh(t)
	o := tp.group(t, "cpu-m5").Options
	if o == nil || *o.ScaleDownUnneededTime != 5*time.Minute || *o.ScaleDownGPUUtilizationThreshold != 0.2 {
		t.Errorf("cpu-m5 options %+v", o)
	}
	if o := tp.group(t, "gpu-g5").Options; o != nil {
		t.Errorf("gpu-g5 options %+v, want none after a bad tag", o)
	}
	var msgs []string
	for _, p := range tp.Problems() {
		msgs = append(msgs, p.Error())
	}
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, `gpu-g5`) || !strings.Contains(all, `scaledownunneededtime="soon"`) {
		t.Errorf("problems %q, want gpu-g5's bad tag named", all)
	}
	if tp.group(t, "gpu-g5").Template == nil {
		t.Error("a bad option tag withheld the template")
	}
}
