package autoscaler

import (
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// withBuffers is the pending list scale-up plans with: the real pending
// pods, then the placeholder pods of the CapacityBuffers when pod
// injection is on. Placeholders carry --expendable-pods-priority-cutoff as
// their priority, the lowest a pod may have and still trigger a scale-up,
// so every real pod takes room before them; the room they take on
// registered nodes is held from scale-down and consolidation like that of
// any pending pod that will schedule there.
func (l *loop) withBuffers() []*v1.Pod {
	if len(l.buffers) == 0 {
		return l.in.Pending
	}
	out := slices.Clone(l.in.Pending)
	for _, b := range l.buffers {
		out = append(out, capacitybuffer.Pods(b, l.opts.ExpendablePodsPriorityCutoff)...)
	}
	return out
}

// realPods drops placeholder pods.
func realPods(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if _, ok := capacitybuffer.Of(p); !ok {
			out = append(out, p)
		}
	}
	return out
}

// bufferStatus says, per buffer, where its placeholders found room, and
// notes on each node the buffers holding room there.
func (l *loop) bufferStatus(st *status.Status) {
	st.Forecasts = l.forecasts
	if len(l.buffers) == 0 {
		return
	}
	byKey := map[string]*status.Buffer{}
	keys := make([]string, 0, len(l.buffers))
	for _, b := range l.buffers {
		if byKey[b.Key()] == nil {
			keys = append(keys, b.Key())
			byKey[b.Key()] = &status.Buffer{Namespace: b.Namespace, Name: b.Name}
		}
		byKey[b.Key()].Replicas += int(b.Replicas)
	}
	onNode := map[string]map[string]bool{}
	for i, p := range l.upPlan.WillSchedule {
		key, ok := capacitybuffer.Of(p)
		if !ok {
			continue
		}
		byKey[key].Fit++
		if node := l.upPlan.Placements[i]; l.in.Snapshot.Node(node) != nil {
			if onNode[node] == nil {
				onNode[node] = map[string]bool{}
			}
			onNode[node][key] = true
			byKey[key].Nodes = appendOnce(byKey[key].Nodes, node)
		}
	}
	for _, p := range l.upPlan.Triggered {
		if key, ok := capacitybuffer.Of(p); ok {
			byKey[key].ScaleUp++
		}
	}
	for _, pp := range l.upPlan.Pending {
		for _, p := range pp.Pods {
			key, ok := capacitybuffer.Of(p)
			if !ok {
				continue
			}
			b := byKey[key]
			if b.NoRoom == 0 && len(pp.Reasons) > 0 {
				b.Reason, b.Message = string(pp.Reasons[0].Reason), pp.Message()
			}
			b.NoRoom++
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		sort.Strings(byKey[k].Nodes)
		st.Buffers = append(st.Buffers, *byKey[k])
	}
	for i := range st.Nodes {
		for key := range onNode[st.Nodes[i].Name] {
			st.Nodes[i].Buffers = append(st.Nodes[i].Buffers, key)
		}
		sort.Strings(st.Nodes[i].Buffers)
	}
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
