package status

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RenderOptions bound the document.
type RenderOptions struct {
	// MaxBytes is the most the document may take; lists are cut, least
	// telling entries first, to stay under it. A ConfigMap holds at most
	// 1 MiB in all.
	MaxBytes int
	// PodsPerEntry is how many pod names a pending entry lists.
	PodsPerEntry int
}

// DefaultRenderOptions leave room for the ConfigMap's metadata under the
// 1 MiB object limit.
func DefaultRenderOptions() RenderOptions {
	return RenderOptions{MaxBytes: 900 << 10, PodsPerEntry: 20}
}

// Render turns one loop's Status into the ConfigMap document and its YAML
// text. prev, the document of the previous loop (nil at first), carries
// each condition's last transition time while its status is unchanged.
func Render(st Status, prev *Document, o RenderOptions) (*Document, string) {
	probe := metav1.NewTime(st.Time.UTC().Truncate(time.Second))
	d := &Document{Time: st.Time.UTC().Format(time.RFC3339), AutoscalerStatus: "Running", SafeToAutoscale: st.Cluster.Health.Safe}
	cw := &d.ClusterWide
	cw.Health = HealthCondition{Status: Healthy, NodeCounts: docCounts(st.Cluster.Nodes), LastProbeTime: probe,
		Reason: st.Cluster.Health.Reason, Message: st.Cluster.Health.Message}
	if !st.Cluster.Health.Safe {
		cw.Health.Status = Unhealthy
	}
	cw.ScaleUp = ScaleUpCondition{Status: ActivityNone, LastProbeTime: probe}
	if st.Cluster.ScaleUpInProgress {
		cw.ScaleUp.Status = ActivityInProgress
	}
	sd := st.Cluster.ScaleDown
	cw.ScaleDown = ScaleDownCondition{Status: candidates(sd.Candidates), Candidates: sd.Candidates, LastProbeTime: probe,
		Skipped: sd.SkippedMessage, CooldownReason: sd.CooldownReason}
	if !sd.CooldownUntil.IsZero() {
		t := metav1.NewTime(sd.CooldownUntil)
		cw.ScaleDown.CooldownUntil = &t
	}
	for _, g := range st.NodeGroups {
		d.NodeGroups = append(d.NodeGroups, groupStatus(g, probe))
	}
	carryTransitions(d, prev, probe)
	d.ScaleUps = st.ScaleUps
	d.Consolidation = st.Consolidation
	d.Repair = st.Repair
	d.BypassedSchedulers, d.OtherSchedulers = st.BypassedSchedulers, st.OtherSchedulers
	d.CapacityBuffers, d.Forecasts = st.Buffers, st.Forecasts
	d.NodeReasons = map[string]int{}
	for _, n := range st.Nodes {
		if n.State == NodeKept {
			d.NodeReasons[n.Reason]++
		}
	}
	return d, fit(d, st, o)
}

func groupStatus(g NodeGroup, probe metav1.Time) NodeGroupStatus {
	target, lo, hi := g.Target, g.Min, g.Max
	ng := NodeGroupStatus{Name: g.ID,
		Health: HealthCondition{Status: Healthy, NodeCounts: docCounts(g.Nodes), CloudProviderTarget: &target,
			MinSize: &lo, MaxSize: &hi, LastProbeTime: probe},
		ScaleUp:   ScaleUpCondition{Status: g.ScaleUp.State, LastProbeTime: probe},
		ScaleDown: ScaleDownCondition{Status: candidates(g.Candidates), Candidates: g.Candidates, LastProbeTime: probe},
	}
	if g.Nodes.Registered > 0 && g.Nodes.Unready*2 > g.Nodes.Registered {
		ng.Health.Status = Unhealthy
	}
	if g.ScaleUp.State == ActivityBackoff {
		ng.ScaleUp.BackoffInfo = &BackoffInfo{ErrorCode: g.ScaleUp.Reason, ErrorMessage: g.ScaleUp.Message}
		until := metav1.NewTime(g.ScaleUp.Until)
		ng.ScaleUp.BackoffUntil = &until
	}
	return ng
}

func docCounts(c NodeCounts) DocCounts {
	return DocCounts{
		Registered: RegisteredCounts{Total: c.Registered, Ready: c.Ready, NotStarted: c.NotStarted, BeingDeleted: c.BeingDeleted,
			Unready: UnreadyCounts{Total: c.Unready, ResourceUnready: c.DevicesOverdue}},
		LongUnregistered: c.LongUnregistered, Unregistered: c.Unregistered,
	}
}

func candidates(n int) string {
	if n > 0 {
		return CandidatesPresent
	}
	return NoCandidates
}

// carryTransitions keeps the previous transition time of every condition
// whose status did not change.
func carryTransitions(d, prev *Document, probe metav1.Time) {
	keep := func(now *metav1.Time, status, prevStatus string, prevTime metav1.Time, had bool) {
		*now = probe
		if had && status == prevStatus && !prevTime.IsZero() {
			*now = prevTime
		}
	}
	var p ClusterWideStatus
	had := prev != nil
	if had {
		p = prev.ClusterWide
	}
	cw := &d.ClusterWide
	keep(&cw.Health.LastTransitionTime, cw.Health.Status, p.Health.Status, p.Health.LastTransitionTime, had)
	keep(&cw.ScaleUp.LastTransitionTime, cw.ScaleUp.Status, p.ScaleUp.Status, p.ScaleUp.LastTransitionTime, had)
	keep(&cw.ScaleDown.LastTransitionTime, cw.ScaleDown.Status, p.ScaleDown.Status, p.ScaleDown.LastTransitionTime, had)
	before := map[string]NodeGroupStatus{}
	if prev != nil {
		for _, g := range prev.NodeGroups {
			before[g.Name] = g
		}
	}
	for i := range d.NodeGroups {
		g := &d.NodeGroups[i]
		pg, ok := before[g.Name]
		keep(&g.Health.LastTransitionTime, g.Health.Status, pg.Health.Status, pg.Health.LastTransitionTime, ok)
		keep(&g.ScaleUp.LastTransitionTime, g.ScaleUp.Status, pg.ScaleUp.Status, pg.ScaleUp.LastTransitionTime, ok)
		keep(&g.ScaleDown.LastTransitionTime, g.ScaleDown.Status, pg.ScaleDown.Status, pg.ScaleDown.LastTransitionTime, ok)
	}
}

// fit adds the pending entries and nodes, most telling first, while the
// document stays under o.MaxBytes; what does not fit is counted in
// Omitted. Sizes are estimated per entry and the whole is checked once at
// the end, cutting further if the estimate fell short. It returns the
// document's text.
func fit(d *Document, st Status, o RenderOptions) string {
	pending := make([]PendingEntry, 0, len(st.Pending))
	for _, p := range st.Pending {
		e := PendingEntry{Count: len(p.Pods), Reasons: p.Reasons}
		for i := 0; i < len(p.Pods) && i < o.PodsPerEntry; i++ {
			e.Pods = append(e.Pods, p.Pods[i].String())
		}
		pending = append(pending, e)
	}
	// Larger groups first: they say the most about the cluster.
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].Count > pending[j].Count })
	nodes := append([]Node(nil), st.Nodes...)
	sort.SliceStable(nodes, func(i, j int) bool { return nodeRank(nodes[i]) < nodeRank(nodes[j]) })
	maxPending, maxNodes := len(pending), len(nodes)
	for {
		d.PendingPods, d.Nodes, d.Omitted = nil, nil, nil
		base, _ := d.Marshal()
		budget := o.MaxBytes - len(base)
		// Pending pods may take at most half unless the nodes leave more.
		nodeNeed := 0
		for i, n := range nodes {
			if i < maxNodes {
				nodeNeed += entrySize(n)
			}
		}
		pendingBudget := max(budget/2, budget-nodeNeed)
		var om Omitted
		for i, e := range pending {
			if size := entrySize(e); i < maxPending && size <= pendingBudget {
				d.PendingPods = append(d.PendingPods, e)
				pendingBudget -= size
				budget -= size
				om.PendingPods += e.Count - len(e.Pods)
			} else {
				om.PendingGroups++
				om.PendingPods += e.Count
			}
		}
		for i, n := range nodes {
			if size := entrySize(n); i < maxNodes && size <= budget {
				d.Nodes = append(d.Nodes, n)
				budget -= size
			} else {
				om.Nodes++
			}
		}
		if om != (Omitted{}) {
			d.Omitted = &om
		}
		text, _ := d.Marshal()
		if len(text) <= o.MaxBytes || (len(d.PendingPods) == 0 && len(d.Nodes) == 0) {
			return text
		}
		// The estimate fell short: keep nine tenths of what was listed.
		maxPending, maxNodes = len(d.PendingPods)*9/10, len(d.Nodes)*9/10
	}
}

// nodeRank orders nodes by how much a reader wants them: removals, then
// unneeded nodes, then nodes kept by a pod or a rule, and nodes that are
// simply busy last.
func nodeRank(n Node) int {
	switch {
	case n.State == NodeRemoving:
		return 0
	case n.State == NodeUnneeded:
		return 1
	case n.Reason == "NotUnderutilized":
		return 3
	}
	return 2
}

// entrySize estimates the YAML size of one list entry from its strings:
// field names, indentation and a margin for quoting. Marshalling each
// entry would cost more than the loop can spare with tens of thousands of
// pending pods; the whole document is measured once at the end.
func entrySize(v any) int {
	const field = 16 // "  name: " and its line end, on average
	switch e := v.(type) {
	case PendingEntry:
		n := 2 * field
		for _, p := range e.Pods {
			n += len(p) + 6
		}
		for _, r := range e.Reasons {
			n += 4*field + len(r.Group) + len(r.Reason) + len(r.Predicate) + len(r.Message)*11/10
		}
		return n
	case Node:
		n := 8*field + len(e.Name) + len(e.Group) + len(e.State) + len(e.Reason) + len(e.Message)*11/10 + len(e.DrainRule)
		if e.Pod != nil {
			n += 3*field + len(e.Pod.Namespace) + len(e.Pod.Name) + len(e.Pod.UID)
		}
		return n
	}
	return 0
}
