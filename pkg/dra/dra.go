// Package dra is what the autoscaler needs to know of Dynamic Resource
// Allocation beyond allocation itself (which pkg/predicates does): the
// ResourceSlices a node group's nodes will publish (made per new node from
// the group's template slices), whether a node has published them yet, and
// how much of a node's accelerator devices its claims hold.
package dra

import (
	"sort"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ForNode makes the slices a new node named node publishes, from its
// group's template slices: node-local to node, each pool renamed (a pool
// named after the template node takes the node's name, others get the
// node's name appended) so that no two nodes share a pool, slice names
// made unique the same way.
func ForNode(template []*resourceapi.ResourceSlice, templateNode, node string) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, len(template))
	for i, t := range template {
		sl := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: rename(t.Name, templateNode, node),
				UID: types.UID("simulated-" + node + "-" + strconv.Itoa(i))},
			Spec: t.Spec,
		}
		n := node
		sl.Spec.NodeName = &n
		sl.Spec.Pool.Name = rename(t.Spec.Pool.Name, templateNode, node)
		out[i] = sl
	}
	return out
}

func rename(name, templateNode, node string) string {
	if name == templateNode {
		return node
	}
	return name + "-" + node
}

// AddForNode adds ForNode's slices to s.
func AddForNode(s *snapshot.Snapshot, template []*resourceapi.ResourceSlice, templateNode, node string) error {
	for _, sl := range ForNode(template, templateNode, node) {
		if err := s.SetResourceSlice(sl); err != nil {
			return err
		}
	}
	return nil
}

// OffersAccelerators reports whether slices publish devices of an
// accelerator driver (gpu.IsAcceleratorDriver): a group with such template
// slices is an accelerator group, like one whose template has nvidia.com/gpu.
func OffersAccelerators(slices []*resourceapi.ResourceSlice) bool {
	for _, sl := range slices {
		if gpu.IsAcceleratorDriver(sl.Spec.Driver) && len(sl.Spec.Devices) > 0 {
			return true
		}
	}
	return false
}

// Unpublished lists, sorted, the drivers whose devices the template slices
// promise and the node's published slices lack in part or in full (fewer
// devices of the driver than the template has). A node of a DRA group
// registers before its DRA driver publishes anything, and a node
// publishing fewer devices than its template (partitions still being made)
// is not what the group promised either: such a node is upcoming, like a
// GPU node whose device plugin has not advertised its GPUs.
func Unpublished(template, published []*resourceapi.ResourceSlice) []string {
	want := map[string]int{}
	for _, sl := range template {
		want[sl.Spec.Driver] += len(sl.Spec.Devices)
	}
	have := map[string]int{}
	for _, sl := range published {
		have[sl.Spec.Driver] += len(sl.Spec.Devices)
	}
	var out []string
	for driver, n := range want {
		if n > 0 && have[driver] < n {
			out = append(out, driver)
		}
	}
	sort.Strings(out)
	return out
}

// AwaitingSlices reports whether the node, a member of group g, has not
// published all the devices g's template slices promise (see Unpublished).
// It is the DRA counterpart of gpu.AwaitingTemplate; a loop counts such a
// node as upcoming until its startup timeout.
func AwaitingSlices(s *snapshot.Snapshot, g *snapshot.NodeGroup, node string) bool {
	if g == nil || len(g.TemplateSlices) == 0 {
		return false
	}
	return len(Unpublished(g.TemplateSlices, s.NodeResourceSlices(node))) > 0
}
