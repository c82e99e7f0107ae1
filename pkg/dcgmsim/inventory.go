package dcgmsim

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// Holder is the pod container a GPU is assigned to, as the kubelet's
// pod-resources API tells dcgm-exporter.
type Holder struct {
	Namespace, Pod, Container string
	UID                       types.UID
}

// PodKey is "namespace/pod".
func (h Holder) PodKey() string { return h.Namespace + "/" + h.Pod }

// GPU is one device of one node.
type GPU struct {
	Node  string
	Index int
	Model Model
	// Holder is nil for a GPU no pod holds.
	Holder *Holder
}

// allocator plays the device plugin: it hands a node's GPU indices to the
// containers that request nvidia.com/gpu and keeps an assignment until the
// pod is gone, so a pod keeps its devices when others come and go. It is not
// safe for concurrent use.
type allocator struct {
	slots map[string][]*Holder // node name -> GPU index -> holder (nil: free)
}

func newAllocator() *allocator { return &allocator{slots: map[string][]*Holder{}} }

// inventory returns every GPU of nodes (allocatable nvidia.com/gpu), sorted
// by node name and index, with holders assigned from pods. Nodes not in the
// list lose their assignments.
func (a *allocator) inventory(nodes []*corev1.Node, pods []*corev1.Pod) []GPU {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if holdsDevices(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	seen := make(map[string]bool, len(sorted))
	var out []GPU
	for _, n := range sorted {
		count := wholeGPUs(n)
		if count == 0 {
			continue
		}
		seen[n.Name] = true
		model := ModelOf(n)
		for i, h := range a.assign(n.Name, count, byNode[n.Name]) {
			out = append(out, GPU{Node: n.Name, Index: i, Model: model, Holder: h})
		}
	}
	for name := range a.slots {
		if !seen[name] {
			delete(a.slots, name)
		}
	}
	return out
}

// assign frees the slots of pods no longer on the node, then gives each
// container still short of its request the lowest free indices, pods in
// creation order (then namespace and name) so the outcome is deterministic.
func (a *allocator) assign(node string, count int, pods []*corev1.Pod) []*Holder {
	slots := a.slots[node]
	if len(slots) != count {
		resized := make([]*Holder, count)
		copy(resized, slots)
		slots = resized
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = true
	}
	held := map[Holder]int{}
	for i, h := range slots {
		if h == nil {
			continue
		}
		if !live[h.UID] {
			slots[i] = nil
			continue
		}
		held[*h]++
	}

	sort.Slice(pods, func(i, j int) bool {
		ti, tj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	next := 0
	for _, p := range pods {
		for _, c := range deviceContainers(p) {
			h := Holder{Namespace: p.Namespace, Pod: p.Name, Container: c.name, UID: p.UID}
			for missing := c.gpus - int64(held[h]); missing > 0; missing-- {
				for next < count && slots[next] != nil {
					next++
				}
				if next == count {
					break // more requested than the node has: the rest get none
				}
				slots[next] = &h
				held[h]++
			}
		}
	}
	a.slots[node] = slots
	return slots
}

type containerGPUs struct {
	name string
	gpus int64
}

// deviceContainers lists the containers of p that request whole GPUs, in
// spec order: sidecars (restartable init containers), then containers.
func deviceContainers(p *corev1.Pod) []containerGPUs {
	var out []containerGPUs
	add := func(c *corev1.Container) {
		q, ok := c.Resources.Limits[gpu.ResourceName]
		if !ok {
			q, ok = c.Resources.Requests[gpu.ResourceName]
		}
		if ok && q.Value() > 0 {
			out = append(out, containerGPUs{name: c.Name, gpus: q.Value()})
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i])
	}
	return out
}

// holdsDevices reports whether p is bound to a node and has not finished:
// the kubelet keeps its devices assigned until then.
func holdsDevices(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// wholeGPUs is the node's allocatable nvidia.com/gpu (MIG slices are not
// simulated).
func wholeGPUs(n *corev1.Node) int {
	q, ok := n.Status.Allocatable[gpu.ResourceName]
	if !ok {
		return 0
	}
	return int(q.Value())
}
