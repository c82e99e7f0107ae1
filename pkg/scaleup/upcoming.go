package scaleup

import (
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// addUpcoming puts into the (forked) snapshot the nodes that are on their
// way: nodes a group was asked for that have not registered (as
// State.Upcoming counts them: instances that never joined are not on their
// way), and registered nodes still starting, simulated as they will be
// once started. Pending pods that fit there must not order new nodes.
func (r *run) addUpcoming() error {
	for _, ni := range r.starting {
		g := r.snap.NodeGroup(ni.Group)
		if clusterstate.AwaitingDevices(r.snap, ni, g) {
			r.plan.AwaitingGPU = append(r.plan.AwaitingGPU, ni.Name())
		}
		r.plan.Starting = append(r.plan.Starting, ni.Name())
		if err := r.publishTemplateSlices(g, ni.Name()); err != nil {
			return err
		}
		if err := r.asStarted(ni, g.Template); err != nil {
			return err
		}
	}
	for _, ni := range r.overdue {
		r.plan.GPUOverdue = append(r.plan.GPUOverdue, ni.Name())
	}
	for _, g := range r.snap.NodeGroups() {
		t := r.templates[g.ID]
		if t == nil {
			continue
		}
		for i := range r.in.State.Upcoming(g.ID) {
			if _, err := t.AddNode(r.snap, fmt.Sprintf("upcoming-%s-%d", g.ID, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// asStarted replaces a starting node by a copy without startup taints and
// with the template's accelerators where it has not advertised them all
// (none yet, or whole GPUs where the template has MIG partitions, or fewer
// time-sliced replicas), keeping its pods.
func (r *run) asStarted(ni *snapshot.NodeInfo, tmpl *v1.Node) error {
	node := ni.Node.DeepCopy()
	gpu.FillFromTemplate(node, tmpl)
	readiness := r.in.State.Options().Readiness
	kept := node.Spec.Taints[:0]
	for _, t := range node.Spec.Taints {
		if !readiness.Ignorable(t.Key) {
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
	pods := append([]*snapshot.PodInfo(nil), ni.Pods...)
	// Removing the node releases its pods' claims; they get their devices
	// back when they return.
	allocs := make([][]*resourceapi.AllocationResult, len(pods))
	for i, pi := range pods {
		allocs[i] = r.claimAllocations(pi.Pod)
	}
	group := ni.Group
	if err := r.snap.RemoveNode(ni.Name()); err != nil {
		return err
	}
	if err := r.snap.AddNodeInGroup(node, group); err != nil {
		return err
	}
	for i, pi := range pods {
		if err := r.snap.AddPodInfoWithClaims(pi, node.Name, allocs[i]); err != nil {
			return err
		}
	}
	return nil
}

// claimAllocations are the current allocations of a pod's claims, by entry
// of spec.resourceClaims (nil when the pod has none).
func (r *run) claimAllocations(pod *v1.Pod) []*resourceapi.AllocationResult {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	claims, err := r.snap.PodClaims(pod)
	if err != nil {
		return nil
	}
	out := make([]*resourceapi.AllocationResult, len(pod.Spec.ResourceClaims))
	for _, c := range claims {
		if c.Claim != nil {
			out[c.Index] = c.Claim.Status.Allocation
		}
	}
	return out
}

// publishTemplateSlices gives a starting node of a DRA group the slices its
// drivers have not published yet, from the group's template slices; a
// driver that published part of its devices has its slices replaced.
func (r *run) publishTemplateSlices(g *snapshot.NodeGroup, node string) error {
	missing := dra.Unpublished(g.TemplateSlices, r.snap.NodeResourceSlices(node))
	if len(missing) == 0 {
		return nil
	}
	for _, sl := range r.snap.NodeResourceSlices(node) {
		if slices.Contains(missing, sl.Spec.Driver) {
			if err := r.snap.RemoveResourceSlice(sl.Name); err != nil {
				return err
			}
		}
	}
	for _, sl := range dra.ForNode(g.TemplateSlices, g.Template.Name, node) {
		if !slices.Contains(missing, sl.Spec.Driver) {
			continue
		}
		if err := r.snap.SetResourceSlice(sl); err != nil {
			return err
		}
	}
	return nil
}

// filterSchedulable places pending pods on existing and upcoming nodes, as
// the scheduler would, higher priority first. Placed pods stay in the fork
// so that they use up room; what is left goes on to scale-up.
func (r *run) filterSchedulable(classes []*Class) []*Class {
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return priority(classes[order[a]].Rep().Pod) > priority(classes[order[b]].Rep().Pod)
	})
	left := make([]*Class, len(classes))
	bound := newRoomBound(r.snap.Nodes())
	for _, ci := range order {
		c := classes[ci]
		if bound.exceeds(&c.Rep().Requests) {
			left[ci] = c
			continue
		}
		pc := r.checker.PreparePodInfo(c.Rep())
		placed := r.placeOnNodes(c, pc)
		for _, pi := range c.Pods[:placed] {
			r.plan.WillSchedule = append(r.plan.WillSchedule, pi.Pod)
			r.plan.Placements = append(r.plan.Placements, r.snap.NodeOf(pi).Name())
		}
		if placed < len(c.Pods) {
			left[ci] = &Class{Pods: c.Pods[placed:]}
		}
	}
	var out []*Class
	for _, c := range left {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// placeOnNodes places the class's pods in order on the first node each fits
// and returns how many it placed; it stops at the first pod that fits
// nowhere, since its equals will not fit either.
func (r *run) placeOnNodes(c *Class, pc *predicates.PodCheck) int {
	nodes := r.snap.Nodes()
	monotonic := estimator.IsMonotonic(c.Rep())
	cursor := 0
	for n, pi := range c.Pods {
		start := 0
		if monotonic {
			start = cursor
		}
		found := -1
		for i := start; i < len(nodes); i++ {
			if !pc.LacksRoom(nodes[i]) && pc.Check(nodes[i]).Fits() {
				found = i
				break
			}
		}
		if found < 0 {
			return n
		}
		if err := pc.Place(pi, nodes[found]); err != nil {
			return n
		}
		cursor = found
	}
	return len(c.Pods)
}

// templatesFor builds the template of every group that has one.
func templatesFor(s *snapshot.Snapshot, in *Input) (map[string]*estimator.Template, error) {
	out := map[string]*estimator.Template{}
	for _, g := range s.NodeGroups() {
		if g.Template == nil {
			continue
		}
		t, err := estimator.NewTemplate(g, in.DaemonSets)
		if err != nil {
			return nil, err
		}
		out[g.ID] = t
	}
	return out, nil
}

// roomBound is, for each resource, the most any one node has free as the
// pending pods are placed. Placing pods only ever lowers free room, so a
// class asking for more of some resource than the bound fits on no node,
// and placeOnNodes need not check it against every node: with thousands of
// distinct pods that fit nowhere (a full cluster, pods asking for more than
// any node has) that scan is most of a loop's time.
type roomBound struct {
	cpu, memory, ephemeral int64
	scalar                 map[v1.ResourceName]int64
}

func newRoomBound(nodes []*snapshot.NodeInfo) roomBound {
	b := roomBound{scalar: map[v1.ResourceName]int64{}}
	for _, ni := range nodes {
		a, u := &ni.Allocatable, &ni.Requested
		b.cpu = max(b.cpu, a.MilliCPU-u.MilliCPU)
		b.memory = max(b.memory, a.Memory-u.Memory)
		b.ephemeral = max(b.ephemeral, a.EphemeralStorage-u.EphemeralStorage)
		for name, q := range a.Scalar {
			b.scalar[name] = max(b.scalar[name], q-u.Scalar[name])
		}
	}
	return b
}

// exceeds: some request is above what any node has free (the resource
// checks of the scheduler compare each request with allocatable minus
// requested, node by node).
func (b *roomBound) exceeds(req *snapshot.Resource) bool {
	if req.MilliCPU > b.cpu || req.Memory > b.memory || req.EphemeralStorage > b.ephemeral {
		return true
	}
	for name, q := range req.Scalar {
		if q > 0 && q > b.scalar[name] {
			return true
		}
	}
	return false
}
