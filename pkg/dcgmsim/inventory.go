package dcgmsim

import (
	"sort"
	"strings"

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

// GPU is one device of one node: a whole GPU, or one MIG instance of it.
type GPU struct {
	Node string
	// Index is the GPU's index on the node; for a MIG instance, its parent
	// GPU's.
	Index int
	Model Model
	// MIG is set for a MIG instance: what dcgm-exporter reports as the
	// GPU_I_PROFILE and GPU_I_ID labels.
	MIG *MIGInstance
	// Holder is nil for a GPU no pod holds.
	Holder *Holder
}

// MIGInstance is a MIG GPU instance: its profile (1g.10gb) and its id,
// numbered from 1 on its parent GPU.
type MIGInstance struct {
	Profile string
	ID      int
	// Fraction is the share of the parent GPU's compute it has, MemoryMiB
	// its framebuffer.
	Fraction  float64
	MemoryMiB float64
}

func newMIGInstance(p gpu.MIGProfile, id, gpuMemoryGB int) *MIGInstance {
	return &MIGInstance{Profile: p.Name, ID: id, Fraction: p.Fraction(gpuMemoryGB), MemoryMiB: float64(p.MemoryGB) * 1024}
}

// allocator plays the device plugin: it hands a node's devices of each
// resource (nvidia.com/gpu, nvidia.com/mig-<profile>) to the containers
// that request them and keeps an assignment until the pod is gone, so a
// pod keeps its devices when others come and go. It is not safe for
// concurrent use.
type allocator struct {
	slots map[slotKey][]*Holder // device index within the resource -> holder (nil: free)
}

type slotKey struct {
	node     string
	resource corev1.ResourceName
}

func newAllocator() *allocator { return &allocator{slots: map[slotKey][]*Holder{}} }

// device is one device a node advertises.
type device struct {
	resource corev1.ResourceName
	parent   int
	mig      *MIGInstance
}

// inventory returns every GPU and MIG instance of nodes, sorted by node
// name, whole GPUs by index first, then MIG instances by profile, with
// holders assigned from pods. Nodes not in the list lose their
// assignments.
func (a *allocator) inventory(nodes []*corev1.Node, pods []*corev1.Pod) []GPU {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if holdsDevices(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	seen := map[slotKey]bool{}
	var out []GPU
	for _, n := range sorted {
		devs := nodeDevices(n)
		if len(devs) == 0 {
			continue
		}
		model := ModelOf(n)
		counts := map[corev1.ResourceName]int{}
		for _, d := range devs {
			counts[d.resource]++
		}
		holders := map[corev1.ResourceName][]*Holder{}
		for r, c := range counts {
			k := slotKey{n.Name, r}
			seen[k] = true
			holders[r] = a.assign(k, c, byNode[n.Name])
		}
		next := map[corev1.ResourceName]int{}
		for _, d := range devs {
			i := next[d.resource]
			next[d.resource]++
			out = append(out, GPU{Node: n.Name, Index: d.parent, Model: model, MIG: d.mig, Holder: holders[d.resource][i]})
		}
	}
	for k := range a.slots {
		if !seen[k] {
			delete(a.slots, k)
		}
	}
	return out
}

// nodeDevices lists what the node's device plugin advertises: whole GPUs
// (nvidia.com/gpu), MIG instances of the mixed strategy
// (nvidia.com/mig-<profile>, on GPUs numbered after the whole ones, filled
// in profile order), and MIG instances advertised as nvidia.com/gpu (GKE
// partitions, or the single strategy with a uniform MIG layout).
func nodeDevices(n *corev1.Node) []device {
	memGB := 0
	if m, ok := gpu.ModelOfNode(n); ok {
		memGB = m.MemoryGB
	}
	var out []device
	whole := allocatable(n, gpu.ResourceName)
	if p, ok := singleProfile(n); ok {
		per := p.PerGPU(memGB)
		for i := 0; i < whole; i++ {
			out = append(out, device{gpu.ResourceName, i / per, newMIGInstance(p, i%per+1, memGB)})
		}
		whole = (whole + per - 1) / per
	} else {
		for i := 0; i < whole; i++ {
			out = append(out, device{resource: gpu.ResourceName, parent: i})
		}
	}
	var migs []corev1.ResourceName
	for name := range n.Status.Allocatable {
		if gpu.KindOf(name) == gpu.MIGSlice {
			migs = append(migs, name)
		}
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i] < migs[j] })
	used, ids := 0.0, map[int]int{}
	for _, r := range migs {
		p, ok := gpu.MIGProfileOf(r)
		if !ok {
			continue
		}
		f := p.Fraction(memGB)
		for k := 0; k < allocatable(n, r); k++ {
			if cur := float64(int(used + 1e-9)); used+f > cur+1+1e-9 {
				used = cur + 1 // does not fit what is left of this GPU
			}
			parent := whole + int(used+1e-9)
			ids[parent]++
			out = append(out, device{r, parent, newMIGInstance(p, ids[parent], memGB)})
			used += f
		}
	}
	return out
}

// singleProfile is the MIG profile of a node whose nvidia.com/gpu are MIG
// instances: GKE's partition size, or a uniform layout under the single
// strategy.
func singleProfile(n *corev1.Node) (gpu.MIGProfile, bool) {
	name := n.Labels[gpu.LabelGKEGPUPartitionSize]
	if name == "" && n.Labels[gpu.LabelMIGStrategy] == "single" {
		name = strings.TrimPrefix(n.Labels[gpu.LabelMIGConfig], "all-")
	}
	p, err := gpu.ParseMIGProfile(name)
	return p, err == nil && name != ""
}

func allocatable(n *corev1.Node, r corev1.ResourceName) int {
	q, ok := n.Status.Allocatable[r]
	if !ok {
		return 0
	}
	return int(q.Value())
}

// assign frees the slots of pods no longer on the node, then gives each
// container still short of its request the lowest free indices, pods in
// creation order (then namespace and name) so the outcome is deterministic.
func (a *allocator) assign(key slotKey, count int, pods []*corev1.Pod) []*Holder {
	slots := a.slots[key]
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
		for _, c := range deviceContainers(p, key.resource) {
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
	a.slots[key] = slots
	return slots
}

type containerGPUs struct {
	name string
	gpus int64
}

// deviceContainers lists the containers of p that request devices of
// resource, in spec order: sidecars (restartable init containers), then
// containers.
func deviceContainers(p *corev1.Pod, resource corev1.ResourceName) []containerGPUs {
	var out []containerGPUs
	add := func(c *corev1.Container) {
		q, ok := c.Resources.Limits[resource]
		if !ok {
			q, ok = c.Resources.Requests[resource]
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
