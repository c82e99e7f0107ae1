package gpu

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// Awaiting reports whether an accelerator node has registered but has not
// advertised its accelerators yet: it carries an accelerator label (or
// accelerator capacity) but no allocatable accelerator, or the NVIDIA MIG
// manager is still applying its MIG layout. It needs no template, so it
// also serves nodes of groups the autoscaler does not manage.
func Awaiting(node *v1.Node) bool {
	if PartitionsPending(node) {
		return true
	}
	return Allocatable(node) == 0 && (HasAcceleratorLabel(node) || Capacity(node) > 0)
}

// PartitionsPending reports whether the NVIDIA MIG manager has been asked
// for a MIG layout (nvidia.com/mig.config) and has not finished applying it
// (nvidia.com/mig.config.state is not "success"): until then the node
// advertises whole GPUs, or nothing, instead of its partitions.
func PartitionsPending(node *v1.Node) bool {
	cfg, ok := node.Labels[LabelMIGConfig]
	if !ok || cfg == "" || cfg == "all-disabled" {
		return false
	}
	return node.Labels[LabelMIGConfigState] != "success"
}

// Missing lists, sorted, the accelerator resources the template advertises
// that node does not yet advertise in full: absent, or allocatable below
// the template's. A MIG node whose partitions are not made yet (it shows
// nvidia.com/gpu where the template has nvidia.com/mig-1g.10gb), a
// time-sliced node whose replicas are not configured yet (4 nvidia.com/gpu
// where the template has 16), and a node whose device plugin has not
// started all miss something.
func Missing(node, template *v1.Node) []v1.ResourceName {
	var out []v1.ResourceName
	for name, want := range template.Status.Allocatable {
		if !IsGPUResource(name) || want.Sign() <= 0 {
			continue
		}
		have, ok := node.Status.Allocatable[name]
		if !ok || have.Cmp(want) < 0 {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// AwaitingTemplate reports whether a node of a group whose template is
// template has not advertised all its accelerators yet (see Missing and
// PartitionsPending). Such a node is upcoming, not a node with room: the
// upstream Cluster Autoscaler counts MIG and time-sliced nodes as unready
// forever, or as ready too early, and orders a second node.
func AwaitingTemplate(node, template *v1.Node) bool {
	if template == nil {
		return Awaiting(node)
	}
	return PartitionsPending(node) || len(Missing(node, template)) > 0
}

// FillFromTemplate sets on node (which the caller owns) the template's
// allocatable and capacity for every accelerator resource node lacks or
// has less of, so a starting node is simulated as it will be once
// advertised; accelerator resources the template does not have (whole
// GPUs a MIG node shows before it is partitioned) are dropped. It returns
// the resources it filled.
func FillFromTemplate(node, template *v1.Node) []v1.ResourceName {
	missing := Missing(node, template)
	if len(missing) == 0 {
		return nil
	}
	for _, rl := range []v1.ResourceList{node.Status.Allocatable, node.Status.Capacity} {
		for name := range rl {
			if _, keep := template.Status.Allocatable[name]; IsGPUResource(name) && !keep {
				delete(rl, name)
			}
		}
	}
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = v1.ResourceList{}
	}
	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	for _, name := range missing {
		q := template.Status.Allocatable[name]
		node.Status.Allocatable[name] = q.DeepCopy()
		if c, ok := template.Status.Capacity[name]; ok {
			node.Status.Capacity[name] = c.DeepCopy()
		} else {
			node.Status.Capacity[name] = q.DeepCopy()
		}
	}
	return missing
}
