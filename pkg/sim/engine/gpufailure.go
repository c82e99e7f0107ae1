package engine

import (
	"cmp"
	"slices"
	"time"

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
		e.rec.brokenNodes++
		e.breakPods(ni.Name())
	}
	e.touch()
	return nil
}

// Work lost on broken GPUs: the pods whose GPUs failed make no progress
// from the failure on. As a Job pod displaced by an interruption, one that
// leaves the node (drained by node repair) does its run again from scratch
// (no checkpoint is assumed): the run it had before the failure is lost,
// and the time from the failure until it leaves is time it held GPUs for
// nothing (stalled). Which of a node's pods had the failed GPUs is not
// known: the pods bound last are taken, until those left fit the GPUs
// still working. A pod still on broken GPUs at the end of the run is
// counted up to the end.

// breakPods stops the progress of the pods on node whose GPUs failed.
func (e *Engine) breakPods(node string) {
	ni := e.snap.Node(node)
	if ni == nil {
		return
	}
	var on []*simPod
	for _, pi := range ni.Pods {
		if p := e.work.pods[pi.Pod.Name]; p != nil && p.w.gpus > 0 && !p.broken {
			on = append(on, p)
		}
	}
	slices.SortFunc(on, func(a, b *simPod) int {
		return cmp.Or(cmp.Compare(a.boundAt, b.boundAt), cmp.Compare(a.pi.Pod.Name, b.pi.Pod.Name))
	})
	left := gpu.Allocatable(ni.Node)
	var used int64
	for _, p := range on {
		if used+p.w.gpus <= left {
			used += p.w.gpus
			continue
		}
		if p.duration > 0 {
			p.broken, p.brokenAt = true, e.now
			p.gen++ // its finish event no longer holds: it makes no progress
		}
	}
}

// brokenRun counts the run a Job pod had on broken GPUs when it leaves
// them, and makes it do that run again.
func (e *Engine) brokenRun(p *simPod, ran time.Duration) {
	e.rec.addBroken(p, p.boundAt+ran)
	p.remaining += ran
	p.broken = false
}

// addBroken counts a broken pod's run from its binding to until: the part
// before the failure lost, the rest stalled.
func (r *recorder) addBroken(p *simPod, until time.Duration) {
	lost := max(p.brokenAt-p.boundAt, 0)
	stalled := max(until-max(p.brokenAt, p.boundAt), 0)
	r.brokenLost.add(1, lost)
	r.brokenLostGPU.add(p.w.gpus, lost)
	r.brokenStalled.add(1, stalled)
	r.brokenStalledGPU.add(p.w.gpus, stalled)
}

// GPUFailureResult is what broken GPUs did to a run.
type GPUFailureResult struct {
	// Nodes had GPUs fail.
	Nodes int
	// LostPodHours and LostGPUHours are the runs Job pods had made
	// before their GPUs failed, to be done again.
	LostPodHours, LostGPUHours float64
	// StalledPodHours and StalledGPUHours are the time Job pods sat on
	// broken GPUs making no progress: until a repair moved them, or to
	// the end of the run.
	StalledPodHours, StalledGPUHours float64
}

// gpuFailureResult adds the pods still on broken GPUs at the end to what
// was counted as pods left them.
func (e *Engine) gpuFailureResult() GPUFailureResult {
	var end recorder // the pods still there, counted apart from the record
	for _, p := range e.work.pods {
		if p.broken && p.node != "" {
			end.addBroken(p, e.end)
		}
	}
	r := &e.rec
	sum := func(a, b exactHours) float64 { return a.hours() + b.hours() }
	return GPUFailureResult{Nodes: r.brokenNodes,
		LostPodHours: sum(r.brokenLost, end.brokenLost), LostGPUHours: sum(r.brokenLostGPU, end.brokenLostGPU),
		StalledPodHours: sum(r.brokenStalled, end.brokenStalled), StalledGPUHours: sum(r.brokenStalledGPU, end.brokenStalledGPU)}
}
