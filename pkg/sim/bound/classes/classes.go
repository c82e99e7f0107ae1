// Package classes turns a simulated run into the pod classes, node shapes
// and pod counts over time that bound.ComputePods packs: which node groups
// each workload's pods may run on (taints and tolerations, node selector
// and required node affinity, checked with kube-scheduler's own helpers on
// the groups' template nodes) and how many of its pods the bound counts at
// each instant (Jobs from submission for their duration, Deployments at the
// replicas their HPA asked for in the run).
package classes

import (
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// Input is what ComputePods takes.
type Input struct {
	Shapes  []bound.Shape
	Classes []bound.Class
	Changes []bound.PodChange
	End     time.Duration
}

// Compute is the per-pod lower bound of a run of sc: bound.ComputePods on
// what FromRun builds, with its default options.
func Compute(sc *scenario.Scenario, res *engine.Result) (bound.Result, error) {
	in, err := FromRun(sc, res)
	if err != nil {
		return bound.Result{}, err
	}
	return bound.ComputePods(in.Shapes, in.Classes, in.Changes, in.End, bound.PodOptions{})
}

// FromRun builds the input of bound.ComputePods for a run of sc: one class
// per workload, its shapes the node groups it may run on resources aside
// (ComputePods drops those it does not fit), one shape per node group
// (res.Shapes, in the scenario's group order). Job pods count from their submission for their duration,
// as in res.Demand; the Deployments' changes are the rest of res.Demand,
// each attributed to the one Deployment whose pod request it is a whole
// multiple of (an error where that is ambiguous).
func FromRun(sc *scenario.Scenario, res *engine.Result) (Input, error) {
	in := Input{Shapes: res.Shapes, End: res.Duration}
	if len(res.Shapes) != len(sc.NodeGroups) {
		return in, fmt.Errorf("run has %d shapes, scenario %s has %d node groups", len(res.Shapes), sc.Name, len(sc.NodeGroups))
	}
	nodes := make([]*v1.Node, len(sc.NodeGroups))
	for i, g := range sc.NodeGroups {
		labels := map[string]string{engine.LabelNodeGroup: g.Name}
		for k, v := range g.Labels {
			labels[k] = v
		}
		nodes[i] = cloudprovider.TemplateNode(cloudprovider.TemplateSpec{Group: g.Name, Capacity: g.Capacity,
			Labels: labels, Taints: g.Taints, InstanceType: g.InstanceType, Zone: g.Zone})
	}
	// Job changes, to be told apart from the Deployments' in res.Demand.
	type key struct {
		at  time.Duration
		amt bound.Amount
	}
	jobChanges := map[key]int{}
	var deployments []int
	for wi := range sc.Workloads {
		w := &sc.Workloads[wi]
		pod := amountOf(w.Pod.Requests)
		in.Classes = append(in.Classes, bound.Class{Name: w.Name, Pod: pod, Shapes: eligible(w, nodes)})
		if w.Deployment != nil {
			deployments = append(deployments, wi)
		}
		for _, b := range w.Jobs {
			if b.Count == 0 {
				continue
			}
			from, to := b.At.Duration, b.At.Duration+b.Duration.Duration
			in.Changes = append(in.Changes, bound.PodChange{At: from, Class: wi, Delta: b.Count},
				bound.PodChange{At: to, Class: wi, Delta: -b.Count})
			for j := 0; j < b.Count; j++ {
				jobChanges[key{from, pod}]++
				jobChanges[key{to, pod.Scale(-1)}]++
			}
		}
	}
	for _, ch := range res.Demand {
		k := key{ch.At, ch.Delta}
		if jobChanges[k] > 0 {
			jobChanges[k]--
			continue
		}
		wi, n, err := attribute(sc, deployments, ch)
		if err != nil {
			return in, err
		}
		in.Changes = append(in.Changes, bound.PodChange{At: ch.At, Class: wi, Delta: n})
	}
	return in, nil
}

// attribute finds the Deployment whose pod request ch.Delta is a whole
// multiple of.
func attribute(sc *scenario.Scenario, deployments []int, ch bound.Change) (int, int, error) {
	found, count := -1, 0
	for _, wi := range deployments {
		n, ok := multiple(ch.Delta, amountOf(sc.Workloads[wi].Pod.Requests))
		if !ok {
			continue
		}
		if found >= 0 {
			return 0, 0, fmt.Errorf("demand change at %v (%+v): Deployments %s and %s both request a divisor of it",
				ch.At, ch.Delta, sc.Workloads[found].Name, sc.Workloads[wi].Name)
		}
		found, count = wi, n
	}
	if found < 0 {
		return 0, 0, fmt.Errorf("demand change at %v (%+v) matches no Job and no Deployment's pod request", ch.At, ch.Delta)
	}
	return found, count, nil
}

// multiple returns n with d = n·pod, when there is one.
func multiple(d, pod bound.Amount) (int, bool) {
	dv := [3]float64{d.CPU, d.MemoryGiB, d.GPUs}
	pv := [3]float64{pod.CPU, pod.MemoryGiB, pod.GPUs}
	n := math.NaN()
	for i := range pv {
		if pv[i] != 0 {
			n = math.Round(dv[i] / pv[i])
			break
		}
	}
	if math.IsNaN(n) || n == 0 {
		return 0, false
	}
	for i := range pv {
		if math.Abs(dv[i]-n*pv[i]) > 1e-6*math.Max(1, math.Abs(dv[i])) {
			return 0, false
		}
	}
	return int(n), true
}

// eligible lists the groups whose template node the workload's pods may be
// placed on, resources aside: every NoSchedule and NoExecute taint
// tolerated, the node selector and required node affinity matched.
// Predicates left out (ports, spread, inter-pod affinity) can only forbid
// more, so leaving them out keeps the bound a bound.
func eligible(w *scenario.Workload, nodes []*v1.Node) []int {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}, Spec: v1.PodSpec{
		NodeSelector: w.Pod.NodeSelector, Tolerations: w.Pod.Tolerations,
	}}
	if w.Pod.NodeAffinity != nil {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: w.Pod.NodeAffinity}}
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []int
	for i, n := range nodes {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false)
		if untolerated {
			continue
		}
		// A term that fails to parse matches nothing, as in kube-scheduler.
		if ok, _ := affinity.Match(n); !ok {
			continue
		}
		out = append(out, i)
	}
	return out
}

// amountOf is a request as the engine counts it for the bound.
func amountOf(r v1.ResourceList) bound.Amount {
	var gpus int64
	for name, q := range r {
		if gpu.IsGPUResource(name) {
			gpus += q.Value()
		}
	}
	return bound.Amount{CPU: float64(r.Cpu().MilliValue()) / 1000, MemoryGiB: float64(r.Memory().Value()) / (1 << 30),
		GPUs: float64(gpus)}
}
