package engine

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// gpuFailure is a scenario's GPU failure queued for its time.
type gpuFailure struct {
	group *groupState
	cfg   scenario.GPUFailure
}

// scheduleGPUFailures queues every group's GPU failures.
func (e *Engine) scheduleGPUFailures() {
	for _, g := range e.cloud.groups {
		for _, f := range g.cfg.GPUFailures {
			e.events.push(&event{at: f.At.Duration, kind: evGPUFailure, failure: &gpuFailure{group: g, cfg: f}})
		}
	}
}

// failGPUs breaks the GPUs of the failure's nodes: the oldest nodes of the
// group that have all their GPUs, each losing cfg.GPUs (all when 0) of its
// allocatable, its capacity and its pods kept.
func (e *Engine) failGPUs(f *gpuFailure) error {
	var healthy []*snapshot.NodeInfo
	for _, ni := range e.snap.NodesInGroup(f.group.cfg.Name) {
		if n := ni.Node; gpu.Allocatable(n) > 0 && gpu.Allocatable(n) == gpu.Capacity(n) {
			healthy = append(healthy, ni)
		}
	}
	// Oldest first; names of the same age by their creation number.
	slices.SortFunc(healthy, func(a, b *snapshot.NodeInfo) int {
		if c := a.Node.CreationTimestamp.Compare(b.Node.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(len(a.Name()), len(b.Name())), cmp.Compare(a.Name(), b.Name()))
	})
	for _, ni := range healthy[:min(max(f.cfg.Nodes, 1), len(healthy))] {
		err := e.replaceNode(ni.Name(), func(n *v1.Node) {
			for name, q := range n.Status.Allocatable {
				if !gpu.IsGPUResource(name) {
					continue
				}
				left := int64(0)
				if f.cfg.GPUs > 0 {
					left = max(q.Value()-f.cfg.GPUs, 0)
				}
				n.Status.Allocatable[name] = *resource.NewQuantity(left, resource.DecimalSI)
			}
		})
		if err != nil {
			return err
		}
	}
	e.touch()
	return nil
}
