package scaledown

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	rsim "github.com/gpuscale/gpuscale/pkg/scaledown/removal"
)

// classifyNodes looks at every node once: whether pods may move onto it,
// and whether it may be removed at all before any simulation. Nodes that may
// not are kept with their reason; the others become candidates.
func (s *session) classifyNodes() {
	for _, ni := range s.snap.Nodes() {
		s.nodes = append(s.nodes, nodeState{ni: ni, removal: -1})
	}
	// Most nodes are kept, each once: one allocation, not a slice grown
	// and copied through every size up to them.
	s.kept = make([]Kept, 0, len(s.nodes))
	s.room.init(s)
	for i := range s.nodes {
		st := &s.nodes[i]
		node := st.ni.Node
		st.group = s.snap.NodeGroup(st.ni.Group)
		// The loop's one definition of ready: the Ready condition without a
		// start-up taint, and the group's accelerators all advertised (no
		// GPUs yet, MIG partitions or time-sliced replicas not made yet are
		// the test scale-up uses); plus accelerator labels for unmanaged
		// templates: a node whose device plugin is still starting is not idle.
		state := s.in.Readiness.State(s.snap, s.in.Now, st.ni, st.group)
		st.ready = state.Schedulable()
		st.awaitingGPU = state.AwaitingDevices() || gpu.Awaiting(node)
		deleting := s.beingDeleted(node)
		// Pods are only simulated onto nodes that can run them now and will
		// stay: Ready, and not on their way out.
		st.dest = st.ready && !deleting
		if !deleting {
			s.room.count(s, st)
		}
		if reason, msg := s.eligibility(st, deleting); reason != "" {
			s.keep(int32(i), reason, msg)
			continue
		}
		st.candidate = true
		s.cands = append(s.cands, int32(i))
	}
}

// eligibility returns why a node cannot be removed whatever its pods, or "".
// The order is the Cluster Autoscaler's.
func (s *session) eligibility(st *nodeState, deleting bool) (Reason, string) {
	switch {
	case deleting:
		return ReasonBeingDeleted, "node is being removed already"
	}
	if why, msg := rsim.Exempt(st.ni, st.group); why != "" {
		return Reason(why), msg
	}
	switch {
	case st.unready() && !s.opts.UnreadyEnabled:
		return ReasonUnreadyDisabled, fmt.Sprintf("node is %s and --scale-down-unready-enabled=false", unreadyWord(st))
	case s.in.Reserved[st.ni.Name()] != "":
		return ReasonReserved, s.in.Reserved[st.ni.Name()]
	}
	if st.awaitingGPU {
		// Its GPUs cannot be counted yet; it waits UnreadyTime instead of
		// being judged by a utilization that reads zero.
		st.util = disruption.Utilization{Resource: gpu.ResourceName, GPUNode: true}
		return "", ""
	}
	g := s.opts.forGroup(st.group)
	st.util = snapshotUtilization(s.snap, st.ni, utilizationOptions{ignoreDaemonSets: g.ignoreDaemonSets,
		ignoreMirror: s.opts.IgnoreMirrorPodsUtilization, cutoff: s.opts.ExpendablePodsPriorityCutoff}, s.in.Now, &s.p.utilization)
	threshold, from := g.threshold, g.thresholdFrom
	if st.util.GPUNode {
		threshold, from = g.gpuThreshold, g.gpuFrom
	}
	if st.util.Value >= threshold {
		// Every loop says this of most nodes: joined, not formatted.
		return ReasonNotUnderutilized, string(st.util.Resource) + " requested is " + percent(st.util.Value) +
			" of allocatable, not below " + percent(threshold) + " (" + from + ")"
	}
	return "", ""
}

// beingDeleted: the actuator is removing the node, or did until recently.
func (s *session) beingDeleted(node *v1.Node) bool {
	return s.deleting[node.Name] || disruption.TaintedToBeDeleted(node, s.in.Now, s.opts.MaxCloudProviderNodeDeletionTime)
}

func hasTaint(node *v1.Node, key string) bool {
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].Key == key {
			return true
		}
	}
	return false
}

func unreadyWord(st *nodeState) string {
	if st.ready && st.awaitingGPU {
		return "waiting for its GPUs to be advertised"
	}
	return "unready"
}

func percent(v float64) string { return strconv.FormatFloat(v*100, 'g', 4, 64) + "%" }

// keep records why node i stays.
func (s *session) keep(i int32, reason Reason, msg string) *Kept {
	st := &s.nodes[i]
	s.kept = append(s.kept, Kept{Node: st.name(), Group: st.groupID(), Reason: reason, Message: msg})
	return &s.kept[len(s.kept)-1]
}
