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

// slowAndFast has two empty groups: "slow", whose options wait an hour
// before removing a node, and "fast", with the planner's unneeded time.
func slowAndFast(t *testing.T) *cluster {
	hour := time.Hour
	c := newCluster(t)
	slow := builder.NodeGroup("slow").Max(10).Target(1).Build()
	slow.Options = &snapshot.GroupOptions{ScaleDownUnneededTime: &hour}
	if err := c.snap.SetNodeGroup(slow); err != nil {
		t.Fatal(err)
	}
	return c.group("fast", 0, 1)
}

// partnerCluster: "web" on node a requires a pod labelled app=db on its
// node. The db pod is on b, whose group waits an hour before removing
// anything; b takes only one pod. The simulation removes b first (lower
// utilization): db moves to the spare node c, and web then fits on c next
// to it. But b waits, so db stays on b in reality: c has no partner for
// web, and b has no room for it. a must stay until b goes.
func partnerCluster(t *testing.T) *cluster {
	c := slowAndFast(t)
	web := controlledBy(builder.Pod("web").CPU("1").Label("app", "web").Affinity(v1.LabelHostname, "app", "db").Build(), "ReplicaSet", "web")
	db := controlledBy(builder.Pod("db").CPU("100m").Label("app", "db").Build(), "ReplicaSet", "db")
	c.node(node4("a").Label(v1.LabelHostname, "a").Build(), "fast", web).
		node(node4("b").Pods(1).Label(v1.LabelHostname, "b").Build(), "slow", db).
		node(node4("c").CPU("8").Label(v1.LabelHostname, "c").Build(), "")
	// c is busy enough not to be a candidate itself.
	c.node(node4("d").CPU("16").Label(v1.LabelHostname, "d").Build(), "", rs("filler", "100m"))
	return c
}

// Destinations hold given only the removals carried out: a node whose pods
// fit elsewhere only because a waiting node's pods moved in the simulation
// is not removed; it waits for that node, and says so.
func TestRemovalDoesNotCountOnWaitingNodes(t *testing.T) {
	c := partnerCluster(t)
	p := planOnce(t, c, immediate(), nil)
	if got := deleted(p); len(got) != 0 {
		t.Fatalf("removed %v: web would be evicted towards c, where its partner db never arrives (b waits); kept:%s", got, keptSummary(p))
	}
	u := unneeded(t, p, "a")
	if u.Reason != scaledown.ReasonDependsOnWaitingNodes {
		t.Errorf("a waits for %s, want %s", u.Reason, scaledown.ReasonDependsOnWaitingNodes)
	}
	if k := kept(t, p, "a"); !strings.Contains(k.Message, "web") {
		t.Errorf("a kept: %s; want the pod named", k.Message)
	}
	if w := unneeded(t, p, "b"); w.Reason != scaledown.ReasonNotUnneededLongEnough {
		t.Errorf("b waits for %s", w.Reason)
	}
}

// Once the node that waited goes, the one that depended on it follows,
// with its pod placed next to the partner's new home.
func TestRemovalFollowsWhenTheWaitingNodeGoes(t *testing.T) {
	c := partnerCluster(t)
	opts := immediate()
	opts.MaxDrainParallelism = 0
	planner := newPlanner(t, opts)
	p := planner.Plan(c.input(t0))
	if len(p.Delete) != 0 {
		t.Fatalf("first loop removed %v", deleted(p))
	}
	p = planner.Plan(c.input(t0.Add(time.Hour)))
	if got := deleted(p); len(got) != 2 {
		t.Fatalf("after the hour removed %v, want a and b; kept:%s", got, keptSummary(p))
	}
	if got := evictions(removal(t, p, "a")); len(got) != 1 || got[0] != "web->c" {
		t.Errorf("a evicts %v, want web->c, beside db", got)
	}
}

// With no node waiting, every unneeded node goes in one loop.
func TestRemovalsBeforeWaitingNodesStand(t *testing.T) {
	c := newCluster(t).group("pool", 0, 3)
	c.node(node4("n1").Build(), "pool", rs("p1", "100m")).
		node(node4("n2").Build(), "pool", rs("p2", "1")).
		node(node4("big").CPU("32").Build(), "", rs("f", "20"))
	opts := immediate()
	opts.MaxDrainParallelism = 0
	p := planOnce(t, c, opts, nil)
	if got := deleted(p); len(got) != 2 {
		t.Fatalf("removed %v, want n1 and n2; kept:%s", got, keptSummary(p))
	}
}
