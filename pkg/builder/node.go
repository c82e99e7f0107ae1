package builder

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// NodeBuilder builds a Ready node; by default it has 4 cpu, 16Gi memory,
// 100Gi ephemeral storage and room for 110 pods.
type NodeBuilder struct{ node *v1.Node }

// Node starts a node labelled with its hostname.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{node: &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{
				v1.ResourceCPU:              resource.MustParse("4"),
				v1.ResourceMemory:           resource.MustParse("16Gi"),
				v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
				v1.ResourcePods:             resource.MustParse("110"),
			},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}}
}

// Build returns the node; capacity equals allocatable.
func (b *NodeBuilder) Build() *v1.Node {
	b.node.Status.Capacity = b.node.Status.Allocatable.DeepCopy()
	return b.node
}

// Allocatable sets one allocatable amount.
func (b *NodeBuilder) Allocatable(name v1.ResourceName, qty string) *NodeBuilder {
	b.node.Status.Allocatable[name] = resource.MustParse(qty)
	return b
}

// CPU sets allocatable cpu.
func (b *NodeBuilder) CPU(qty string) *NodeBuilder { return b.Allocatable(v1.ResourceCPU, qty) }

// Memory sets allocatable memory.
func (b *NodeBuilder) Memory(qty string) *NodeBuilder { return b.Allocatable(v1.ResourceMemory, qty) }

// Pods sets the pod capacity.
func (b *NodeBuilder) Pods(n int64) *NodeBuilder {
	b.node.Status.Allocatable[v1.ResourcePods] = *resource.NewQuantity(n, resource.DecimalSI)
	return b
}

// GPU sets allocatable nvidia.com/gpu.
func (b *NodeBuilder) GPU(n int64) *NodeBuilder {
	b.node.Status.Allocatable[GPU] = *resource.NewQuantity(n, resource.DecimalSI)
	return b
}

// Label adds a label.
func (b *NodeBuilder) Label(k, v string) *NodeBuilder { b.node.Labels[k] = v; return b }

// Zone sets the topology.kubernetes.io/zone label.
func (b *NodeBuilder) Zone(zone string) *NodeBuilder { return b.Label(v1.LabelTopologyZone, zone) }

// Taint adds a taint.
func (b *NodeBuilder) Taint(key, value string, effect v1.TaintEffect) *NodeBuilder {
	b.node.Spec.Taints = append(b.node.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Unschedulable cordons the node.
func (b *NodeBuilder) Unschedulable() *NodeBuilder { b.node.Spec.Unschedulable = true; return b }

// GroupBuilder builds a snapshot node group.
type GroupBuilder struct{ g snapshot.NodeGroup }

// NodeGroup starts a group with min 0 and max 10.
func NodeGroup(id string) *GroupBuilder {
	return &GroupBuilder{g: snapshot.NodeGroup{ID: id, MaxSize: 10}}
}

// Min sets the minimum size.
func (b *GroupBuilder) Min(n int) *GroupBuilder { b.g.MinSize = n; return b }

// Max sets the maximum size.
func (b *GroupBuilder) Max(n int) *GroupBuilder { b.g.MaxSize = n; return b }

// Target sets the target size.
func (b *GroupBuilder) Target(n int) *GroupBuilder { b.g.TargetSize = n; return b }

// Template sets the node new members look like.
func (b *GroupBuilder) Template(n *v1.Node) *GroupBuilder { b.g.Template = n; return b }

// Price sets the hourly price of one node.
func (b *GroupBuilder) Price(perHour float64) *GroupBuilder { b.g.PricePerHour = perHour; return b }

// Spot marks the group as interruptible capacity.
func (b *GroupBuilder) Spot() *GroupBuilder { b.g.Spot = true; return b }

// InstanceType sets the machine type.
func (b *GroupBuilder) InstanceType(t string) *GroupBuilder { b.g.InstanceType = t; return b }

// TemplateSlices sets the ResourceSlices new members publish; each is made
// node-local to the template node (call after Template).
func (b *GroupBuilder) TemplateSlices(slices ...*resourceapi.ResourceSlice) *GroupBuilder {
	for _, sl := range slices {
		name := b.g.Template.Name
		sl.Spec.NodeName = &name
		b.g.TemplateSlices = append(b.g.TemplateSlices, sl)
	}
	return b
}

// Build returns the group.
func (b *GroupBuilder) Build() snapshot.NodeGroup { return b.g }
