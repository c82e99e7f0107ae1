package dst

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// check observes the cluster and runs the invariants; true stops the run.
func (r *run) check(step int, what string, final bool) bool {
	o := r.observe(step, final)
	r.hist.observe(o)
	r.res.Trace = append(r.res.Trace, fmt.Sprintf("%d %s | %s", step, what, r.digest()))
	for _, inv := range r.o.Invariants {
		r.res.Checks++
		for _, d := range inv.Check(r.hist, step) {
			r.res.Violations = append(r.res.Violations, Violation{Invariant: inv.Name, Step: step, Detail: d})
		}
	}
	return len(r.res.Violations) > 0
}

func (r *run) observe(step int, final bool) Observation {
	o := Observation{Step: step, At: r.clock.Now(), Taints: map[string]string{}, TaintedBy: map[string]string{}, Leader: r.leader.id,
		StartedAt: r.started, FaultAfterStart: r.world.faults.firstHitSince(r.started), Final: final}
	for _, n := range r.world.nodes() {
		for _, t := range n.Spec.Taints {
			if t.Key == disruption.TaintToBeDeleted {
				o.Taints[n.Name] = t.Value
				if by := r.world.taintWriter(n.Name, t.Value); by != "" {
					o.TaintedBy[n.Name] = by
				}
			}
		}
	}
	if r.quiet {
		o.FaultsOver = true
		o.Unbound = overdue(r.waitingSince, r.servable(), o.At, r.o.PodWaitBound)
		marked := make([]string, 0, len(o.Taints))
		for node, v := range o.Taints {
			marked = append(marked, node+"="+v)
		}
		o.Stuck = overdue(r.markedSince, marked, o.At, r.o.RemovalBound)
	}
	if final {
		o.Idle = r.idleNodes()
	}
	return o
}

// overdue notes since when each of now's keys has been seen, forgetting
// the others, and returns those seen for longer than bound, sorted.
func overdue(since map[string]time.Time, keys []string, now time.Time, bound time.Duration) []string {
	seen := make(map[string]bool, len(keys))
	var out []string
	for _, k := range keys {
		seen[k] = true
		first, ok := since[k]
		if !ok {
			since[k] = now
		} else if now.Sub(first) > bound {
			out = append(out, k)
		}
	}
	for k := range since {
		if !seen[k] {
			delete(since, k)
		}
	}
	sort.Strings(out)
	return out
}

// servable are the waiting pods the cloud has room for: a group whose
// nodes fit the pod can grow within its maximum and the cluster limits.
func (r *run) servable() []string {
	c := r.cloud
	c.mu.Lock()
	count, gpus := len(c.instances), 0
	for _, in := range c.instances {
		gpus += c.spec(in.group).GPUs
	}
	room := map[string]bool{}
	for _, g := range r.o.World.Groups {
		room[g.ID] = c.groups[g.ID].target < g.Max && count < r.o.World.MaxNodesTotal && gpus+g.GPUs <= r.o.World.MaxGPUs
	}
	c.mu.Unlock()
	var out []string
	for _, p := range r.world.unboundPods() {
		for _, g := range r.o.World.Groups {
			if room[g.ID] && fitsGroup(p, g) {
				out = append(out, podKey(p))
				break
			}
		}
	}
	return out
}

// idleNodes are the nodes that hold no pod now and held none at any
// observation of the second half of the tail.
func (r *run) idleNodes() []string {
	busy := map[string]bool{}
	for _, p := range r.world.pods() {
		if p.Spec.NodeName != "" {
			busy[p.Spec.NodeName] = true
		}
	}
	var out []string
	for _, n := range r.world.nodes() {
		if !busy[n.Name] && r.clock.Since(n.CreationTimestamp.Time) > r.o.ScanInterval*time.Duration(r.o.TailTicks)/2 {
			out = append(out, n.Name)
		}
	}
	return out
}

// digest is the cluster in one line: nodes with their taints and pods,
// waiting pods, the cloud's targets.
func (r *run) digest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%s", r.clock.Since(epoch))
	pods := map[string][]string{}
	for _, p := range r.world.pods() {
		name := p.Name
		if p.DeletionTimestamp != nil {
			name += "~"
		}
		pods[p.Spec.NodeName] = append(pods[p.Spec.NodeName], name)
	}
	for _, n := range r.world.nodes() {
		fmt.Fprintf(&b, " %s%s%v", n.Name, taintMarks(n), pods[n.Name])
	}
	fmt.Fprintf(&b, " waiting%v", pods[""])
	for _, g := range r.cloud.groupsNow() {
		fmt.Fprintf(&b, " %s=%d", g.ID, g.TargetSize)
	}
	return b.String()
}

func taintMarks(n *v1.Node) string {
	var keys []string
	for _, t := range n.Spec.Taints {
		keys = append(keys, t.Key[strings.LastIndex(t.Key, "/")+1:])
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return "{" + strings.Join(keys, ",") + "}"
}
