package removal

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Judge runs the drain rules over the pods of the nodes a pass may take
// out, for scale-down and consolidation alike: which pods must move, which
// go with their node, which keep it. It judges each node's pods once with
// the PodDisruptionBudgets as they stand at the start of the pass and
// remembers the verdicts; the simulation judges a node's pods again only
// when they fall under a budget that removals of the pass have drawn on.
type Judge struct {
	Rules drain.Rules
	// Ctx carries the time, the budgets and the replica counts; Node is
	// set for each node judged.
	Ctx drain.Context
	// WaitKeeps: a pod the rules let run to completion (safe-to-evict
	// "on-completion") keeps its node as a blocking pod does
	// (consolidation). Otherwise the node may be found unneeded and is
	// removed once the pod has completed (scale-down).
	WaitKeeps bool
	kinds     []kind
}

// kind is what the rules said of one pod, as the simulation needs it.
type kind uint8

const (
	kindStays kind = iota // goes with its node, or is gone already
	kindMoves
	kindDaemonSet
)

// Judged is what the first judgement found on one node.
type Judged struct {
	// own is the number of pods the node had; their kinds are
	// Judge.kinds[at:at+own].
	own, at int
	// Moving counts the pods that must move.
	Moving int
	// Budgeted: a pod that must move falls under a PodDisruptionBudget.
	Budgeted bool
	// Waits is the first pod the node waits for (WaitKeeps off), or nil.
	Waits *v1.Pod
}

// Blocked is the pod that keeps a node and the rule's verdict.
type Blocked struct {
	Pod     *v1.Pod
	Verdict drain.Verdict
}

// Message says why the node stays, with the rule's code.
func (b Blocked) Message() string { return fmt.Sprintf("%s (%s)", b.Verdict.Message, b.Verdict.Code) }

// Reset starts a pass, forgetting the verdicts of the last one.
func (j *Judge) Reset(ctx drain.Context) {
	j.Ctx = ctx
	j.kinds = j.kinds[:0]
}

// First judges every pod of ni at the start of the pass into jd. It
// returns false, with the pod, when one of them keeps the node.
func (j *Judge) First(ni *snapshot.NodeInfo, jd *Judged) (Blocked, bool) {
	j.Ctx.Node = ni.Node
	*jd = Judged{at: len(j.kinds), own: len(ni.Pods)}
	for _, pi := range ni.Pods {
		k, b, ok := j.judge(pi.Pod, jd)
		if !ok {
			j.kinds = j.kinds[:jd.at]
			return b, false
		}
		if k == kindMoves {
			jd.Moving++
			jd.Budgeted = jd.Budgeted || j.Ctx.Budgets.Covers(pi.Pod)
		}
		j.kinds = append(j.kinds, k)
	}
	return Blocked{}, true
}

// judge runs the rules over one pod.
func (j *Judge) judge(pod *v1.Pod, jd *Judged) (kind, Blocked, bool) {
	v := j.Rules.Evaluate(&j.Ctx, pod)
	switch {
	case v.Outcome == drain.Block, v.Outcome == drain.Wait && j.WaitKeeps:
		return kindStays, Blocked{Pod: pod, Verdict: v}, false
	case v.Outcome == drain.Drain:
		return kindMoves, Blocked{}, true
	case v.Outcome == drain.Wait:
		if jd.Waits == nil {
			jd.Waits = pod
		}
	case v.Code == drain.CodeDaemonSetPod:
		return kindDaemonSet, Blocked{}, true
	}
	return kindStays, Blocked{}, true
}

// Item is a pod that must leave a node being simulated: one of the node's
// own (PI set, P made when it is first placed) or one an earlier removal of
// the pass moved there (P set). From is the node it leaves and Dest where
// it is placed, -1 until then.
type Item struct {
	PI         *snapshot.PodInfo
	P          *Pod
	From, Dest int32
}

// ToMove appends to items the pods of node i (ni, first judged into jd)
// that must move now, and to ds its DaemonSet pods. The node's own pods
// come first, in their order, with their first verdicts unless they fall
// under a budget that the pass has drawn on; the pods earlier removals of
// the pass moved here follow, without being judged again, since their
// budget was charged when they first moved. It returns false, with the
// pod, when a pod judged again now keeps the node.
func (j *Judge) ToMove(sim *Simulator, i int32, ni *snapshot.NodeInfo, jd *Judged, items []Item, ds []*v1.Pod) ([]Item, []*v1.Pod, Blocked, bool) {
	rejudge := jd.Budgeted && j.Ctx.Budgets.Consumed() > 0
	j.Ctx.Node = ni.Node
	for k, pi := range ni.Pods {
		if k >= jd.own {
			if p := sim.Moved(pi); p != nil {
				items = append(items, Item{P: p, From: i, Dest: -1})
				continue
			}
		}
		kd := kindStays
		if k < jd.own && !rejudge {
			kd = j.kinds[jd.at+k]
		} else {
			var b Blocked
			var ok bool
			if kd, b, ok = j.judge(pi.Pod, jd); !ok {
				return items, ds, b, false
			}
		}
		switch kd {
		case kindMoves:
			items = append(items, Item{PI: pi, From: i, Dest: -1})
		case kindDaemonSet:
			ds = append(ds, pi.Pod)
		}
	}
	return items, ds, Blocked{}, true
}

// MissMessage says why pod fits on no other node; name names the node a
// Miss refers to.
func MissMessage(pod *v1.Pod, m Miss, name func(int32) string) string {
	key := pod.Namespace + "/" + pod.Name
	if m.Node < 0 {
		return fmt.Sprintf("pod %s must move, but no other node can take pods", key)
	}
	n := name(m.Node)
	return fmt.Sprintf("pod %s fits on no other node (first tried %s: %s)", key, n, m.Result.Message(n))
}

// DropExpendable takes the pods below the expendable priority cutoff out of
// snap, as the Cluster Autoscaler never lets them into its own: they count
// towards no utilization, need no new home, and leave their room to pods
// that move. It returns scratch, reused, holding the pods it dropped.
func DropExpendable(snap *snapshot.Snapshot, cutoff int32, scratch []*snapshot.PodInfo) []*snapshot.PodInfo {
	doomed := scratch[:0]
	for _, ni := range snap.Nodes() {
		for _, pi := range ni.Pods {
			if drain.IsExpendable(pi.Pod, cutoff) {
				doomed = append(doomed, pi)
			}
		}
	}
	for _, pi := range doomed {
		_ = snap.RemovePod(pi.Pod.Namespace, pi.Pod.Name) // it was just listed
	}
	return doomed
}
