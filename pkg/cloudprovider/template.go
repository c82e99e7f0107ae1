package cloudprovider

import (
	"maps"
	"path"
	"strings"

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
	name := "template-" + templateName(s.Group)
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

// templateName turns a group id into something valid as a node name and a
// hostname label value: the last path element of a URL id (GCE instance
// groups), lower case, other characters than [a-z0-9.-] made '-', at most
// 54 characters so "template-" + it fits in 63.
func templateName(group string) string {
	base := strings.ToLower(path.Base(strings.TrimRight(group, "/")))
	out := []byte(base)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			out[i] = '-'
		}
	}
	if len(out) > 54 {
		out = out[:54]
	}
	return strings.Trim(string(out), ".-")
}
