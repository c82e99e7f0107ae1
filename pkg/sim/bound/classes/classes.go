// Package classes turns a simulated run into the pod classes, node shapes
// and pod counts over time that bound.ComputePods packs: which node groups
// each workload's pods may run on (taints and tolerations, node selector
// and required node affinity, checked with kube-scheduler's own helpers on
// the groups' template nodes) and how many of its pods the bound counts at
// each instant (Jobs from submission for their duration, Deployments at the
// replicas their HPA asked for in the run), as the engine recorded them.
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
// per workload, in the scenario's order, its shapes the node groups it may
// run on resources aside (ComputePods drops those it does not fit); one
// shape per node group (res.Shapes, in the scenario's group order); the
// pod changes the engine recorded (res.PodDemand: Job pods from their
// submission for their duration, Deployments at the replicas their HPA
// asked for). Each pod change is checked against the matching entry of
// res.Demand, so a run of another scenario is refused.
func FromRun(sc *scenario.Scenario, res *engine.Result) (Input, error) {
	in := Input{Shapes: res.Shapes, End: res.Duration}
	if len(res.Shapes) != len(sc.NodeGroups) {
		return in, fmt.Errorf("run has %d shapes, scenario %s has %d node groups", len(res.Shapes), sc.Name, len(sc.NodeGroups))
	}
	if len(res.PodDemand) != len(res.Demand) {
		return in, fmt.Errorf("run has %d demand changes and %d pod changes; want one pod change per demand change",
			len(res.Demand), len(res.PodDemand))
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
	for wi := range sc.Workloads {
		w := &sc.Workloads[wi]
		in.Classes = append(in.Classes, bound.Class{Name: w.Name, Pod: amountOf(w.Pod.Requests), Shapes: eligible(w, nodes)})
	}
	in.Changes = make([]bound.PodChange, 0, len(res.PodDemand))
	for i, ch := range res.PodDemand {
		if ch.Class < 0 || ch.Class >= len(in.Classes) {
			return in, fmt.Errorf("pod change %d at %v: workload index %d out of range [0, %d) of scenario %s",
				i, ch.At, ch.Class, len(in.Classes), sc.Name)
		}
		want := in.Classes[ch.Class].Pod.Scale(float64(ch.Delta))
		if d := res.Demand[i]; d.At != ch.At || !near(d.Delta, want) {
			return in, fmt.Errorf("pod change %d at %v: %d pods of workload %s request %+v, the run's demand change is %+v at %v",
				i, ch.At, ch.Delta, in.Classes[ch.Class].Name, want, d.Delta, d.At)
		}
		in.Changes = append(in.Changes, ch)
	}
	return in, nil
}

// near reports whether a and b agree to rounding.
func near(a, b bound.Amount) bool {
	x := [3]float64{a.CPU, a.MemoryGiB, a.GPUs}
	y := [3]float64{b.CPU, b.MemoryGiB, b.GPUs}
	for i := range x {
		if math.Abs(x[i]-y[i]) > 1e-6*math.Max(1, math.Abs(x[i])) {
			return false
		}
	}
	return true
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
