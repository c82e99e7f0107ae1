package autoscaler_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// spotCluster has a spot group with one busy node, a second spot group of
// the same offering, and a dearer on-demand group, all of one instance
// type in one zone; the price expander chooses.
func spotCluster(t *testing.T) (*autoscaler.Autoscaler, *snapshot.Snapshot) {
	t.Helper()
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.ScaleUp.Expander = "price" })
	s := snapshot.New()
	for _, g := range []snapshot.NodeGroup{
		gpuGroup("a-spot", "p5.48xlarge", "us-east-1a", 1, true),
		gpuGroup("b-spot-same", "p5.48xlarge", "us-east-1a", 1.5, true),
		gpuGroup("c-on-demand", "p5.48xlarge", "us-east-1a", 3, false),
	} {
		if err := s.SetNodeGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	setTarget(t, s, "a-spot", 1)
	n := s.NodeGroup("a-spot").Template.DeepCopy()
	n.Name = "spot-1"
	n.CreationTimestamp.Time = t0.Add(-time.Hour)
	if err := s.AddNodeInGroup(n, "a-spot"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{
		owned(builder.Pod("train").CPU("4").GPU(1).Toleration("nvidia.com/gpu").OnNode("spot-1").Build()),
		builder.Pod("bare").CPU("1").Toleration("nvidia.com/gpu").OnNode("spot-1").Build(),
	} {
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	return a, s
}

func interrupt(t *testing.T, s *snapshot.Snapshot, node, key string) {
	t.Helper()
	ni := s.Node(node)
	n := ni.Node.DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
	if err := s.UpdateNode(n, ni.Group); err != nil {
		t.Fatal(err)
	}
}

// A spot node told it is being taken away: the loop that sees the signal
// orders its pods' replacement on another capacity type (the same spot
// pool is being reclaimed, so neither spot group), and hands the node to
// the shell to drain by the end of the notice, with every pod but
// DaemonSet and mirror pods to evict. The next loop orders nothing more.
func TestInterruptedNodeIsReplacedInTheSameLoop(t *testing.T) {
	for _, tc := range []struct {
		signal string
		notice time.Duration
	}{
		{autoscaler.TaintAWSSpotInterruption, 2 * time.Minute},
		{autoscaler.TaintAWSRebalance, 2 * time.Minute},
		{autoscaler.TaintGKEImpendingTermination, 30 * time.Second},
	} {
		t.Run(tc.signal, func(t *testing.T) {
			a, s := spotCluster(t)
			if got := summary(step(t, a, autoscaler.Input{Now: t0, Snapshot: s})); got != "" {
				t.Fatalf("before the signal %q, want nothing", got)
			}
			interrupt(t, s, "spot-1", tc.signal)
			now := t0.Add(10 * time.Second)
			plan := step(t, a, autoscaler.Input{Now: now, Snapshot: s})
			if got := summary(plan); got != "remove spot-1; scale-up c-on-demand+1" {
				t.Fatalf("on the signal %q, want the node drained and its pod's replacement on demand", got)
			}
			rm := plan.Actions[0].(autoscaler.RemoveNodes).Removals[0]
			if rm.Interruption != tc.signal || !rm.Deadline.Equal(now.Add(tc.notice)) || len(rm.Evict) != 2 {
				t.Errorf("removal %+v: want the signal, the deadline at the end of the %s notice and both pods to evict", rm, tc.notice)
			}
			if g := groupStatus(plan, "b-spot-same").ScaleUp; g.State != status.ActivityBackoff || g.Reason != autoscaler.ReasonInterrupted {
				t.Errorf("b-spot-same %+v: want backed off, its spot pool being reclaimed", g)
			}
			if len(plan.Status.Nodes) != 1 || plan.Status.Nodes[0].Name != "spot-1" || plan.Status.Nodes[0].State != status.NodeRemoving ||
				plan.Status.Nodes[0].Reason != autoscaler.ReasonInterrupted || !strings.Contains(plan.Status.Nodes[0].Message, tc.signal) {
				t.Errorf("status nodes %+v: want spot-1 removing, taken away by %s", plan.Status.Nodes, tc.signal)
			}
			setTarget(t, s, "c-on-demand", 1)
			plan = step(t, a, autoscaler.Input{Now: now.Add(10 * time.Second), Snapshot: s, Outcomes: accepted(plan, now)})
			if got := summary(plan); got != "" {
				t.Errorf("the loop after %q, want nothing: the removal is under way and the replacement upcoming", got)
			}
		})
	}
}

// A taint that is not a configured signal changes nothing; no signals turn
// the handling off.
func TestInterruptionSignalsAreConfigured(t *testing.T) {
	a, s := spotCluster(t)
	interrupt(t, s, "spot-1", "example.com/something-else")
	if got := summary(step(t, a, autoscaler.Input{Now: t0, Snapshot: s})); got != "" {
		t.Errorf("an unknown taint: %q, want nothing", got)
	}
	_, s = spotCluster(t)
	off := newAutoscaler(t, func(o *autoscaler.Options) { o.Interruption.Signals = nil })
	interrupt(t, s, "spot-1", autoscaler.TaintAWSSpotInterruption)
	if got := summary(step(t, off, autoscaler.Input{Now: t0, Snapshot: s})); got != "" {
		t.Errorf("with no signals: %q, want nothing", got)
	}
}

// price × (1 + r × penalty), r in interruptions per node-hour.
func TestEffectivePrice(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		interruptions, nodes int
		window               time.Duration
		penalty, want        float64
	}{
		{"never interrupted", 0, 4, time.Hour, 1, 2},
		{"one of one node in an hour", 1, 1, time.Hour, 1, 4},
		{"one of four nodes in an hour", 1, 4, time.Hour, 1, 2.5},
		{"two of two nodes over two hours, penalty half an hour", 2, 2, 2 * time.Hour, 0.5, 2.5},
		{"no nodes left counts as one", 1, 0, time.Hour, 1, 4},
		{"no penalty", 3, 1, time.Hour, 0, 2},
	} {
		if got := autoscaler.EffectivePrice(2, tc.interruptions, tc.nodes, tc.window, tc.penalty); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A group interrupted often costs more than its price: once its backoff
// has ended, the price expander weighs its interruption rate and prefers a
// dearer group that is not interrupted; without the penalty it would take
// the interrupted group again.
func TestInterruptionsRaiseAGroupsPrice(t *testing.T) {
	for _, tc := range []struct {
		penalty float64
		want    string
	}{{1, "scale-up b-spot-same+1"}, {0, "scale-up a-spot+1"}} {
		_, s := spotCluster(t)
		a := newAutoscaler(t, func(o *autoscaler.Options) {
			o.ScaleUp.Expander = "price"
			o.Interruption.Penalty = tc.penalty
		})
		// b-spot-same launches another pool here: only the rate counts.
		b := *s.NodeGroup("b-spot-same")
		b.Template = b.Template.DeepCopy()
		b.Template.Labels[v1.LabelTopologyZone] = "us-east-1b"
		if err := s.SetNodeGroup(b); err != nil {
			t.Fatal(err)
		}
		interrupt(t, s, "spot-1", autoscaler.TaintAWSSpotInterruption)
		step(t, a, autoscaler.Input{Now: t0, Snapshot: s})
		if err := s.RemoveNode("spot-1"); err != nil {
			t.Fatal(err)
		}
		setTarget(t, s, "a-spot", 0)
		later := t0.Add(10 * time.Minute)
		pending := []*v1.Pod{owned(builder.Pod("next").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())}
		if got := only(step(t, a, autoscaler.Input{Now: later, Snapshot: s, Pending: pending}), "scale-up"); got != tc.want {
			t.Errorf("penalty %v: %q, want %q", tc.penalty, got, tc.want)
		}
	}
}
