package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// failingProvider holds groups in memory, records calls, and reports the
// failures queued in fail once each.
type failingProvider struct {
	groups map[string]*snapshot.NodeGroup
	calls  []string
	fail   []cloudprovider.FailedCreations
}

func (p *failingProvider) Name() string                  { return "test" }
func (p *failingProvider) Refresh(context.Context) error { return nil }
func (p *failingProvider) NodeGroups() []snapshot.NodeGroup {
	var out []snapshot.NodeGroup
	for _, id := range []string{"a-cheap", "b-dear"} {
		out = append(out, *p.groups[id])
	}
	return out
}
func (p *failingProvider) NodeGroupForNode(*v1.Node) (string, error) { return "", nil }
func (p *failingProvider) IncreaseSize(_ context.Context, g string, d int) error {
	p.calls = append(p.calls, fmt.Sprintf("increase %s %d", g, d))
	p.groups[g].TargetSize += d
	return nil
}
func (p *failingProvider) DeleteNodes(context.Context, string, []*v1.Node) error { return nil }
func (p *failingProvider) DecreaseTargetSize(_ context.Context, g string, d int) error {
	p.calls = append(p.calls, fmt.Sprintf("decrease %s %d", g, d))
	p.groups[g].TargetSize -= d
	return nil
}
func (p *failingProvider) FailedCreations() []cloudprovider.FailedCreations {
	out := p.fail
	p.fail = nil
	return out
}

// twoGroups is a provider of two GPU groups of up to max nodes each,
// a-cheap (price 1, template tmpl("ta")) and b-dear (price 3, tmpl("tb")).
func twoGroups(max int, tmpl func(name string) *v1.Node) *failingProvider {
	cp := &failingProvider{groups: map[string]*snapshot.NodeGroup{}}
	for _, g := range []snapshot.NodeGroup{
		builder.NodeGroup("a-cheap").Max(max).Price(1).Template(tmpl("ta")).Build(),
		builder.NodeGroup("b-dear").Max(max).Price(3).Template(tmpl("tb")).Build(),
	} {
		cp.groups[g.ID] = &g
	}
	return cp
}

// gpuTemplate is a node of 8 cpus, 32Gi and one GPU.
func gpuTemplate(name string) *v1.Node {
	return builder.Node(name).CPU("8").Memory("32Gi").GPU(1).Build()
}

// quietOptions are the defaults with the price expander, no metrics
// server, no leader election, a fake clock at t0 and no logs.
func quietOptions() Options {
	o := DefaultOptions()
	o.Autoscaler.ScaleUp.Expander = "price"
	o.Address, o.LeaderElection.Enabled = "", false
	o.Clock = clocktesting.NewFakeClock(t0)
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return o
}

// A zone out of GPUs: the cheaper group fails to create its node, so the
// next loop gives its target back, backs it off and grows the next option,
// without waiting for the provisioning timeout.
func TestFailedCreationsBackOffAndTurnToTheNextGroup(t *testing.T) {
	cp := twoGroups(3, gpuTemplate)
	o := quietOptions()
	o.Autoscaler.ScaleUp.NewPodScaleUpDelay = 0
	client := fake.NewClientset()
	c, err := New(client, cp, o)
	if err != nil {
		t.Fatal(err)
	}
	pod := builder.Pod("train").GPU(1).Build()
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	if err := c.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	c.events.recorder = rec
	ctx := context.Background()
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"increase a-cheap 1"}; !slices.Equal(cp.calls, want) {
		t.Fatalf("first loop calls = %v, want %v (the price expander picks the cheaper group)", cp.calls, want)
	}
	cp.fail = []cloudprovider.FailedCreations{{Group: "a-cheap", Count: 1, Class: cloudprovider.ErrorOutOfResources,
		Code: "InsufficientInstanceCapacity", Message: "no g5 capacity in us-east-1a", Zone: "us-east-1a"}}
	cp.calls = nil
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"decrease a-cheap 1", "increase b-dear 1"}; !slices.Equal(cp.calls, want) {
		t.Fatalf("second loop calls = %v, want %v", cp.calls, want)
	}
	doc := c.lastStatus
	if g := doc.NodeGroups[0]; g.Name != "a-cheap" || g.ScaleUp.Status != "Backoff" || g.ScaleUp.BackoffInfo == nil ||
		g.ScaleUp.BackoffInfo.ErrorCode != cloudprovider.ErrorOutOfResources || !strings.Contains(g.ScaleUp.BackoffInfo.ErrorMessage, "InsufficientInstanceCapacity") {
		t.Errorf("a-cheap status %+v, want backed off with the cloud's reason", g.ScaleUp)
	}
	if ev := drainEvents(rec); !strings.Contains(ev, "Warning "+status.EventFailedToScaleUpGroup+" Scale-up failed for group a-cheap in us-east-1a") ||
		!strings.Contains(ev, "InsufficientInstanceCapacity no g5 capacity") {
		t.Errorf("events %q: want a warning naming the group, its zone and the cloud's reason", ev)
	}
	cp.calls = nil
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cp.calls) != 0 {
		t.Errorf("third loop calls = %v, want none: the failure is reported once and b-dear's node is on its way", cp.calls)
	}
}

// The priority ConfigMap is read again each loop: a change takes effect
// without a restart, and a broken edit keeps the last good priorities.
func TestPriorityConfigMapChangesApplyWithoutRestart(t *testing.T) {
	newProvider := func() *failingProvider { return twoGroups(3, gpuTemplate) }
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-priority-expander", Namespace: "kube-system",
		ResourceVersion: "1"}, Data: map[string]string{"priorities": "10:\n  - a-.*\n1:\n  - b-.*\n"}}
	client := fake.NewClientset(cm)
	o := DefaultOptions()
	o.Autoscaler.ScaleUp.Expander = "priority"
	o.Autoscaler.ScaleUp.Priorities, _ = PriorityConfigMap(cm)
	o.Namespace = "kube-system"
	o.Address = ""
	o.LeaderElection.Enabled = false
	o.Clock = clocktesting.NewFakeClock(t0)
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	pod := builder.Pod("train").GPU(1).Build()
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	ctx := context.Background()
	cp := newProvider()
	c, err := New(client, cp, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	step := func(data, version string) []string {
		t.Helper()
		if data != "" {
			upd := cm.DeepCopy()
			upd.Data["priorities"], upd.ResourceVersion = data, version
			if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for id := range cp.groups {
			cp.groups[id].TargetSize = 0 // the node never comes: every loop scales up again
		}
		cp.calls = nil
		if err := c.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		return cp.calls
	}
	if got, want := step("", ""), []string{"increase a-cheap 1"}; !slices.Equal(got, want) {
		t.Fatalf("first loop: %v, want %v", got, want)
	}
	if got, want := step("1:\n  - a-.*\n10:\n  - b-.*\n", "2"), []string{"increase b-dear 1"}; !slices.Equal(got, want) {
		t.Fatalf("after the ConfigMap preferred b: %v, want %v", got, want)
	}
	if got, want := step("ten:\n  - a-.*\n", "3"), []string{"increase b-dear 1"}; !slices.Equal(got, want) {
		t.Fatalf("after a broken edit: %v, want %v (the last good priorities)", got, want)
	}
}

// The metrics dashboards read: upstream's names, labels and label values.
func TestMetricsNamesAndLabels(t *testing.T) {
	tmpl := func(name string) *v1.Node {
		return builder.Node(name).CPU("8").Memory("32Gi").GPU(1).Label("k8s.amazonaws.com/accelerator", "nvidia-a10g").Build()
	}
	cp := twoGroups(3, tmpl)
	o := quietOptions()
	o.EmitPerNodeGroupMetrics = true
	c, err := New(fake.NewClientset(), cp, o)
	if err != nil {
		t.Fatal(err)
	}
	pod := builder.Pod("train").GPU(1).Build()
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	if err := c.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cp.fail = []cloudprovider.FailedCreations{{Group: "a-cheap", Count: 1, Class: cloudprovider.ErrorOutOfResources, Code: "InsufficientInstanceCapacity"}}
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	families, err := c.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = true
		}
	}
	for _, want := range []string{
		"cluster_autoscaler_cluster_safe_to_autoscale{}",
		"cluster_autoscaler_nodes_count{state=notStarted}",
		"cluster_autoscaler_nodes_count{state=unregistered}",
		"cluster_autoscaler_node_groups_count{node_group_type=autoscaled}",
		"cluster_autoscaler_unschedulable_pods_count{type=unschedulable}",
		"cluster_autoscaler_scaled_up_nodes_total{gpu_name=nvidia-a10g,gpu_resource_name=nvidia.com/gpu}",
		"cluster_autoscaler_failed_scale_ups_total{gpu_name=nvidia-a10g,gpu_resource_name=nvidia.com/gpu,reason=cloudProviderError}",
		"cluster_autoscaler_failed_node_creations_total{reason=OutOfResources}",
		"cluster_autoscaler_node_group_backoff_status{node_group=a-cheap,reason=OutOfResources}",
		"cluster_autoscaler_node_group_target_count{node_group=b-dear}",
		"cluster_autoscaler_scale_down_in_cooldown{}",
		"cluster_autoscaler_cpu_limits_cores{direction=maximum}",
		"cluster_autoscaler_function_duration_seconds{function=updateClusterState}",
	} {
		if !got[want] {
			t.Errorf("no series %s", want)
		}
	}
}

// drainEvents returns the events recorded so far, one a line.
func drainEvents(rec *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}
