package dst

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Invariant is one property checked after every step: Check returns what
// breaks it at step (nothing when it holds), from the history so far.
type Invariant struct {
	Name  string
	Check func(h *History, step int) []string
}

// Violation is an invariant broken at a step.
type Violation struct {
	Invariant string
	Step      int
	Detail    string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at step %d: %s", v.Invariant, v.Step, v.Detail)
}

// All are the invariants, in a fixed order.
func All() []Invariant {
	return []Invariant{
		{"PodsLeaveOnlyByEvictionOrCompletion", PodsLeaveOnlyByEvictionOrCompletion},
		{"NoUnmovablePodDisrupted", NoUnmovablePodDisrupted},
		{"NoPodLostWithItsNode", NoPodLostWithItsNode},
		{"ScaleUpWithinNeed", ScaleUpWithinNeed},
		{"LimitsRespected", LimitsRespected},
		{"NoStaleTaintAfterRestart", NoStaleTaintAfterRestart},
		{"SingleActingLeader", SingleActingLeader},
		{"Liveness", Liveness},
	}
}

// PodsLeaveOnlyByEvictionOrCompletion: the autoscaler never deletes a
// pod; it asks the Eviction API, which honours budgets and grace periods.
func PodsLeaveOnlyByEvictionOrCompletion(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Kind == EventPodDeletedDirectly {
			out = append(out, fmt.Sprintf("%s deleted pod %s directly (%s)", e.Instance, e.Object, e.Result))
		}
	}
	return out
}

// NoUnmovablePodDisrupted: no pod that may not move (do-not-disrupt,
// safe-to-evict=false, local storage, no controller) is evicted, and no
// node is deleted while it holds one.
func NoUnmovablePodDisrupted(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Kind != EventPodEvicted && e.Kind != EventNodeDeleted {
			continue
		}
		for _, p := range e.Pods {
			if p.MayNotMove == "" {
				continue
			}
			if e.Kind == EventPodEvicted {
				out = append(out, fmt.Sprintf("pod %s (%s) was evicted", p.Name, p.MayNotMove))
			} else {
				out = append(out, fmt.Sprintf("node %s was deleted holding pod %s (%s)", e.Object, p.Name, p.MayNotMove))
			}
		}
	}
	return out
}

// NoPodLostWithItsNode: when a node is deleted it holds no pod still
// running or still in its grace period: a drain evicts every pod and
// waits for the terminating ones.
func NoPodLostWithItsNode(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Kind != EventNodeDeleted {
			continue
		}
		for _, p := range e.Pods {
			state := "running"
			if p.Terminating {
				state = "terminating, its grace period cut short"
			}
			out = append(out, fmt.Sprintf("node %s was deleted by %s holding pod %s (%s)", e.Object, e.Instance, p.Name, state))
		}
	}
	return out
}

// ScaleUpWithinNeed: a scale-up of a group orders no more nodes than the
// waiting pods that fit the group's nodes could use, once the group's
// instances already on their way (ordered, not registered, within
// --max-node-provision-time) are counted: every pod needs at most one new
// node, and a scale-up means pods were left over after every upcoming node
// of the group took at least one.
func ScaleUpWithinNeed(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Kind == EventScaleUp && e.Delta+e.Upcoming > e.Pending {
			out = append(out, fmt.Sprintf("%s ordered %d node(s) of %s with %d already coming for %d waiting pod(s) that fit",
				e.Instance, e.Delta, e.Group, e.Upcoming, e.Pending))
		}
	}
	return out
}

// LimitsRespected: what was ordered never exceeds --max-nodes-total or
// the --gpu-total maximum.
func LimitsRespected(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Kind != EventScaleUp {
			continue
		}
		if e.MaxNodesTotal > 0 && e.InstancesAfter > e.MaxNodesTotal {
			out = append(out, fmt.Sprintf("%s ordered %s up to %d instances, over --max-nodes-total %d", e.Instance, e.Group,
				e.InstancesAfter, e.MaxNodesTotal))
		}
		if e.MaxGPUs > 0 && e.GPUsAfter > e.MaxGPUs {
			out = append(out, fmt.Sprintf("%s ordered %s up to %d GPUs, over --gpu-total max %d", e.Instance, e.Group,
				e.GPUsAfter, e.MaxGPUs))
		}
	}
	return out
}

// staleTaintGrace is how long a new leader has to clean the ToBeDeleted
// taints its predecessor left: the clean-up runs at its first loop, and
// again at each loop while it cannot start (three loop periods of the
// harness). It is shorter than --max-cloud-provider-node-deletion-time
// (1m in the harness), after which the planner judges such a taint stale
// by itself and may replace it with its own: a grace as long would let the
// planner hide a missing clean-up.
const staleTaintGrace = 30 * time.Second

// NoStaleTaintAfterRestart: once the process that leads now has led for
// staleTaintGrace, no node carries a ToBeDeleted taint that a predecessor
// wrote (or, writer unknown, one older than its start). A fault met within the grace
// may have failed the clean-up of a node, which is reported and left to
// the planner: the invariant then says nothing until the next start.
func NoStaleTaintAfterRestart(h *History, step int) []string {
	o, ok := h.last()
	if !ok || o.Step != step || o.At.Sub(o.StartedAt) < staleTaintGrace {
		return nil
	}
	if !o.FaultAfterStart.IsZero() && o.FaultAfterStart.Before(o.StartedAt.Add(staleTaintGrace)) {
		return nil
	}
	var out []string
	for _, node := range sortedKeys(o.Taints) {
		v, err := strconv.ParseInt(o.Taints[node], 10, 64)
		if err != nil {
			out = append(out, fmt.Sprintf("node %s carries a ToBeDeleted taint with value %q", node, o.Taints[node]))
			continue
		}
		// The writer, where known, settles it: a predecessor may have
		// tainted the node in the second the leader started.
		by := o.TaintedBy[node]
		if (by != "" && by != o.Leader) || (by == "" && time.Unix(v, 0).Before(o.StartedAt.Truncate(time.Second))) {
			if by == "" {
				by = "a predecessor"
			}
			out = append(out, fmt.Sprintf("node %s still carries the ToBeDeleted taint of %s, put by %s before %s started at %s",
				node, time.Unix(v, 0).UTC().Format(time.TimeOnly), by, o.Leader, o.StartedAt.Format(time.TimeOnly)))
		}
	}
	return out
}

// SingleActingLeader: a replica that lost the Lease makes no cloud
// change with a context that is still live (its API writes are refused:
// world.go).
func SingleActingLeader(h *History, step int) []string {
	var out []string
	for _, e := range h.eventsOf(step) {
		if e.Deposed && e.Kind == EventCloudWrite {
			out = append(out, fmt.Sprintf("%s called %s(%s) after losing the Lease (%s)", e.Instance, e.Verb, e.Object, e.Result))
		}
	}
	return out
}

// Liveness: once the faults stop, a pod the cloud has room for gets a
// node, and a removal begun finishes (or is called off), each within its
// bound; and at the end no node stayed idle for the tail's second half.
func Liveness(h *History, step int) []string {
	o, ok := h.last()
	if !ok || o.Step != step || !o.FaultsOver {
		return nil
	}
	var out []string
	if len(o.Unbound) > 0 {
		out = append(out, fmt.Sprintf("pod(s) %s still wait for a node the cloud has room for", strings.Join(o.Unbound, ", ")))
	}
	if len(o.Stuck) > 0 {
		out = append(out, fmt.Sprintf("node(s) %s stay marked for deletion, the removal neither finished nor called off",
			strings.Join(o.Stuck, ", ")))
	}
	if len(o.Idle) > 0 {
		out = append(out, fmt.Sprintf("node(s) %s stayed empty through the quiet tail", strings.Join(o.Idle, ", ")))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
