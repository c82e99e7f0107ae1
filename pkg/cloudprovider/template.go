package cloudprovider

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateSpec describes the nodes of a group for scale-up from zero.
type TemplateSpec struct {
	// Group is the node group id; the template node is "template-<Group>".
	Group string
	// Capacity is what the node offers (GPUs included); pods defaults to
	// the kubelet's 110 when absent.
	Capacity v1.ResourceList
	// Labels are added to the well-known ones (os, arch, hostname, and
	// instance type, zone and region when set); they win over them.
	Labels map[string]string
	Taints []v1.Taint
	// InstanceType, Zone and Region fill the well-known labels.
	InstanceType, Zone, Region string
	// Arch defaults to amd64.
	Arch string
}

// TemplateNode builds the Ready node a new member of the group would be.
func TemplateNode(s TemplateSpec) *v1.Node {
	name := "template-" + s.Group
	arch := s.Arch
	if arch == "" {
		arch = "amd64"
	}
	labels := map[string]string{
		v1.LabelOSStable:   "linux",
		v1.LabelArchStable: arch,
		v1.LabelHostname:   name,
	}
	if s.InstanceType != "" {
		labels[v1.LabelInstanceTypeStable] = s.InstanceType
	}
	if s.Zone != "" {
		labels[v1.LabelTopologyZone] = s.Zone
	}
	if s.Region != "" {
		labels[v1.LabelTopologyRegion] = s.Region
	}
	maps.Copy(labels, s.Labels)
	capacity := s.Capacity.DeepCopy()
	if capacity == nil {
		capacity = v1.ResourceList{}
	}
	if _, ok := capacity[v1.ResourcePods]; !ok {
		capacity[v1.ResourcePods] = *resource.NewQuantity(110, resource.DecimalSI)
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       v1.NodeSpec{Taints: append([]v1.Taint(nil), s.Taints...)},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}
