package controller

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestEventLimiterRepeatsOnlyAfterQuietOrChange(t *testing.T) {
	l := newEventLimiter(5 * time.Minute)
	steps := []struct {
		msg  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", time.Minute, false}, {"b", 2 * time.Minute, true}, {"b", 8 * time.Minute, true},
	}
	for _, s := range steps {
		if got := l.allow("uid-1", s.msg, t0.Add(s.at)); got != s.want {
			t.Errorf("allow(%q at %v) = %v, want %v", s.msg, s.at, got, s.want)
		}
	}
	if !l.allow("uid-2", "a", t0.Add(time.Minute)) {
		t.Error("a different object was limited by another's event")
	}
}

func TestUnschedulable(t *testing.T) {
	pod := builder.Pod("p").Build()
	if unschedulable(pod) {
		t.Error("a pod the scheduler has not tried is not unschedulable")
	}
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	if !unschedulable(pod) {
		t.Error("PodScheduled=False/Unschedulable not seen")
	}
	pod.Status.Conditions[0].Reason = "SchedulingGated"
	if unschedulable(pod) {
		t.Error("a gated pod is not unschedulable")
	}
}

func TestStatusSaysWhyPodsWaitAndGroupsBackOff(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("gpu").Max(4).Target(2).Template(builder.Node("t").GPU(1).Build()).Build())
	_ = s.AddNodeInGroup(builder.Node("gpu-1").GPU(1).Build(), "gpu")
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.RecordFailure("gpu", "2 node(s) not registered", t0)
	pod := builder.Pod("train").Build()
	plan := autoscaler.Plan{ScaleUp: scaleup.Plan{Pending: []scaleup.PendingPods{{Pods: []*v1.Pod{pod},
		Reasons: []scaleup.GroupReason{{Group: "gpu", Reason: "backed off"}}}}}, ScaleDownSkipped: "this loop scales up"}
	status := buildStatus(t0.Add(time.Minute), &view{snap: s}, plan, st)
	g := status.NodeGroups[0]
	if g.ScaleUp.Status != "Backoff" || !strings.Contains(g.ScaleUp.Message, "2 node(s) not registered") {
		t.Errorf("group scale-up status = %+v, want Backoff with the reason", g.ScaleUp)
	}
	if g.Health.NodeCounts.Unregistered != 1 || g.CloudProviderTarget != 2 {
		t.Errorf("group counts = %+v target %d, want 1 unregistered of target 2", g.Health.NodeCounts, g.CloudProviderTarget)
	}
	if len(status.PendingPods) != 1 || status.PendingPods[0].Pods[0] != "default/train" ||
		status.PendingPods[0].Reason != "node group gpu: backed off" {
		t.Errorf("pending = %+v", status.PendingPods)
	}
	if !strings.Contains(status.ClusterWide.ScaleDown.Message, "this loop scales up") {
		t.Errorf("scale-down status = %+v, want it to say why it was skipped", status.ClusterWide.ScaleDown)
	}
}

func TestPriorityConfigMapKeys(t *testing.T) {
	for _, key := range []string{"priorities", "priority"} {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-priority-expander"},
			Data: map[string]string{key: "10:\n  - .*p2.*\n"}}
		p, err := PriorityConfigMap(cm)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if prio, ok := p.Priority("eks-p2-group"); !ok || prio != 10 {
			t.Errorf("key %q: priority = %d %v, want 10", key, prio, ok)
		}
	}
	if _, err := PriorityConfigMap(&v1.ConfigMap{}); err == nil || !strings.Contains(err.Error(), `"priorities"`) {
		t.Errorf("empty ConfigMap: err = %v, want one naming the key", err)
	}
}
