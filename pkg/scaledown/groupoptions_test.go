package scaledown_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func optionedGroup(t *testing.T, c *cluster, id string, o *snapshot.GroupOptions) {
	t.Helper()
	g := builder.NodeGroup(id).Max(100).Target(1).Build()
	g.Options = o
	if err := c.snap.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
}

// A group's own unneeded time wins over the cluster's: its empty node goes
// after 2m while the other group's waits the cluster's 10m.
func TestGroupUnneededTime(t *testing.T) {
	two := 2 * time.Minute
	c := newCluster(t)
	optionedGroup(t, c, "quick", &snapshot.GroupOptions{ScaleDownUnneededTime: &two})
	optionedGroup(t, c, "plain", nil)
	c.node(node4("q1").Build(), "quick").node(node4("p1").Build(), "plain")
	runSteps(t, c, scaledown.DefaultOptions(), []step{
		{at: 0, wantWait: map[string]waiting{
			"q1": {scaledown.ReasonNotUnneededLongEnough, two, 0},
			"p1": {scaledown.ReasonNotUnneededLongEnough, 10 * time.Minute, 0},
		}},
		{at: two, wantDelete: []string{"q1"}, wantWait: map[string]waiting{
			"p1": {scaledown.ReasonNotUnneededLongEnough, 8 * time.Minute, 0},
		}},
	})
}

// Thresholds per group: a node at 40% cpu stays in a group whose threshold
// is 0.3 and is unneeded in one at the cluster's 0.5; the message names the
// group option.
func TestGroupUtilizationThreshold(t *testing.T) {
	low := 0.3
	c := newCluster(t)
	optionedGroup(t, c, "strict", &snapshot.GroupOptions{ScaleDownUtilizationThreshold: &low})
	optionedGroup(t, c, "plain", nil)
	c.node(node4("s1").Build(), "strict", rs("a", "1600m")).
		node(node4("p1").Build(), "plain", rs("b", "1600m")).
		node(node4("big").Build(), "", rs("c", "100m"))
	p := planOnce(t, c, immediate(), nil)
	k := kept(t, p, "s1")
	if k.Reason != scaledown.ReasonNotUnderutilized || !strings.Contains(k.Message, "node group option scaledownutilizationthreshold") {
		t.Errorf("s1 kept %s: %s; want not underutilized by the group option", k.Reason, k.Message)
	}
	removal(t, p, "p1")
}

// The GPU threshold and IgnoreDaemonSetsUtilization per group.
func TestGroupGPUThresholdAndDaemonSets(t *testing.T) {
	high, yes := 0.9, true
	c := newCluster(t)
	optionedGroup(t, c, "gpu-high", &snapshot.GroupOptions{ScaleDownGPUUtilizationThreshold: &high})
	optionedGroup(t, c, "gpu", nil)
	optionedGroup(t, c, "ds", &snapshot.GroupOptions{IgnoreDaemonSetsUtilization: &yes})
	optionedGroup(t, c, "plain", nil)
	train := func(name string) *v1.Pod {
		return controlledBy(builder.Pod(name).GPU(3).Build(), "ReplicaSet", name)
	}
	agent := func(name string) *v1.Pod {
		return controlledBy(builder.Pod(name).CPU("3").Build(), "DaemonSet", "agent")
	}
	c.node(node4("g1").GPU(4).Build(), "gpu-high", train("t1")).
		node(node4("g2").GPU(4).Build(), "gpu", train("t2")).
		node(node4("spare").GPU(8).Build(), "").
		node(node4("d1").Build(), "ds", agent("a1")).
		node(node4("d2").Build(), "plain", agent("a2"))
	p := planOnce(t, c, immediate(), nil)
	if got := removal(t, p, "g1"); got.Utilization.GPU != 0.75 {
		t.Errorf("g1 utilization %+v, want GPU 0.75", got.Utilization)
	}
	if k := kept(t, p, "g2"); k.Reason != scaledown.ReasonNotUnderutilized {
		t.Errorf("g2 kept %s: %s; want not underutilized at the cluster's 0.5", k.Reason, k.Message)
	}
	removal(t, p, "d1")
	if k := kept(t, p, "d2"); k.Reason != scaledown.ReasonNotUnderutilized {
		t.Errorf("d2 kept %s: %s; want its DaemonSet pod counted", k.Reason, k.Message)
	}
}
