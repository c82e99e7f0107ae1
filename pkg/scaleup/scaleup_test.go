package scaleup_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

func opts(expander string) scaleup.Options {
	o := scaleup.DefaultOptions()
	o.Expander = expander
	return o
}

// Seed story: one GPU pod pending gives exactly one GPU node, and not a CPU node.
func TestOneGPUPodGivesOneGPUNode(t *testing.T) {
	w := newWorld(t).
		group(builder.NodeGroup("cpu").Template(cpuTemplate("cpu-t"))).
		group(builder.NodeGroup("gpu-a10g").Template(gpuTemplate("gpu-t", 1)))
	plan := w.plan(opts("random"), t0, gpuPod("train", 1))
	if got := summary(plan); got != "gpu-a10g+1" {
		t.Fatalf("scale-ups = %q, want gpu-a10g+1", got)
	}
	if len(plan.Triggered) != 1 || len(plan.Pending) != 0 {
		t.Errorf("triggered %d pending %d, want 1 and 0", len(plan.Triggered), len(plan.Pending))
	}
}

// Seed story: two 1-GPU pods with a 4-GPU group and a 1-GPU group: the price
// expander picks the cheaper total, whichever it is.
func TestPriceExpanderPicksCheaperTotal(t *testing.T) {
	cases := []struct {
		name           string
		price4, price1 float64
		want           string
	}{
		{"one big node is cheaper than two small", 3.0, 1.6, "gpu-x4+1"},
		{"two small nodes are cheaper than one big", 5.0, 1.0, "gpu-x1+2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t).
				group(builder.NodeGroup("gpu-x4").Template(gpuTemplate("t4", 4)).Price(tc.price4)).
				group(builder.NodeGroup("gpu-x1").Template(gpuTemplate("t1", 1)).Price(tc.price1))
			plan := w.plan(opts("price"), t0, gpuPod("a", 1), gpuPod("b", 1))
			if got := summary(plan); got != tc.want {
				t.Errorf("scale-ups = %q, want %q", got, tc.want)
			}
		})
	}
}

// Seed story: three zonal pools of one machine type share a scale-up evenly.
func TestBalanceSimilarZonalGroups(t *testing.T) {
	w := newWorld(t)
	for _, z := range []string{"a", "b", "c"} {
		w.group(builder.NodeGroup("pool-" + z).Max(10).Template(builder.Node("t-" + z).CPU("4").Memory("16Gi").Zone("us-central1-" + z).Build()))
	}
	o := opts("least-waste")
	o.BalanceSimilarNodeGroups = true
	pods := replicas(6, func(i int) *v1.Pod { return owned(builder.Pod(fmt.Sprintf("web-%d", i)).CPU("3").Build(), "web") })
	plan := w.plan(o, t0, pods...)
	if got := summary(plan); got != "pool-a+2 pool-b+2 pool-c+2" {
		t.Fatalf("scale-ups = %q, want 2 nodes in each zone", got)
	}
}

// Upstream's AWS comparator ignores the labels that name a node's zone and
// group; zonal EKS groups carry topology.k8s.aws/zone-id (since EKS 1.30),
// kops and eksctl their own names.
func TestBalancingIgnoresUpstreamsProviderLabels(t *testing.T) {
	for _, label := range []string{"topology.k8s.aws/zone-id", "alpha.eksctl.io/instance-id", "lifecycle",
		"kops.k8s.io/instancegroup", "beta.kubernetes.io/fluentd-ds-ready", "topology.ebs.csi.aws.com/zone"} {
		t.Run(label, func(t *testing.T) {
			w := newWorld(t)
			for i, z := range []string{"a", "b"} {
				w.group(builder.NodeGroup("pool-" + z).Max(10).Template(builder.Node("t-"+z).CPU("4").Memory("16Gi").
					Zone("us-east-1"+z).Label(label, fmt.Sprintf("value-%d", i)).Build()))
			}
			o := opts("least-waste")
			o.BalanceSimilarNodeGroups = true
			pods := replicas(4, func(i int) *v1.Pod { return owned(builder.Pod(fmt.Sprintf("web-%d", i)).CPU("3").Build(), "web") })
			if got := summary(w.plan(o, t0, pods...)); got != "pool-a+2 pool-b+2" {
				t.Errorf("scale-ups = %q, want the groups balanced although %s differs", got, label)
			}
		})
	}
}

func TestBalancingRespectsExemptionAndZonalPods(t *testing.T) {
	w := newWorld(t)
	for _, z := range []string{"a", "b"} {
		w.group(builder.NodeGroup("pool-" + z).Template(builder.Node("t-" + z).CPU("4").Zone(z).Build()))
	}
	w.group(builder.NodeGroup("pool-c").Template(builder.Node("t-c").CPU("4").Zone("c").Label("team", "ml").Build()))
	o := opts("least-nodes")
	o.BalanceSimilarNodeGroups = true

	t.Run("a custom label exempts a group", func(t *testing.T) {
		pods := replicas(4, func(i int) *v1.Pod { return builder.Pod(fmt.Sprintf("p-%d", i)).CPU("3").Build() })
		for seed := int64(0); seed < 8; seed++ {
			o.Seed = seed
			got := summary(w.plan(o, t0, pods...))
			if got != "pool-a+2 pool-b+2" && got != "pool-c+4" {
				t.Errorf("seed %d: scale-ups = %q, want a and b balanced or exempt c alone", seed, got)
			}
		}
		o.Seed = 0
	})
	t.Run("pods that need one zone scale only that zone", func(t *testing.T) {
		pods := replicas(4, func(i int) *v1.Pod {
			return builder.Pod(fmt.Sprintf("z-%d", i)).CPU("3").NodeSelector(v1.LabelTopologyZone, "b").Build()
		})
		plan := w.plan(o, t0, pods...)
		if got := summary(plan); got != "pool-b+4" {
			t.Errorf("scale-ups = %q, want pool-b+4", got)
		}
	})
}

// Seed story (EKS): priorities 50 for p3 and 10 for p2; p3 is tried first and,
// when its nodes do not come within --max-node-provision-time, p2.
func TestPriorityFallbackAfterProvisioningTimeout(t *testing.T) {
	prio, err := expander.ParsePriorities("10:\n  - .*p2-node-group.*\n50:\n  - .*p3-node-group.*\n")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t).
		group(builder.NodeGroup("eks-p2-node-group").Template(gpuTemplate("p2", 1))).
		group(builder.NodeGroup("eks-p3-node-group").Template(gpuTemplate("p3", 1)))
	o := opts("priority")
	o.Priorities = prio
	pod := gpuPod("train", 1)

	first := w.plan(o, t0, pod)
	if got := summary(first); got != "eks-p3-node-group+1" {
		t.Fatalf("first choice = %q, want p3", got)
	}
	w.apply(first, t0)

	// Within the provision time the requested node is upcoming: no new scale-up.
	if got := summary(w.plan(o, t0.Add(10*time.Minute), pod)); got != "" {
		t.Fatalf("scaled up again while the p3 node was on its way: %q", got)
	}
	// After 15 minutes without the node: p3 is backed off, its target comes back, p2 is next.
	late := w.plan(o, t0.Add(16*time.Minute), pod)
	if len(w.shrinks) != 1 || w.shrinks[0].Group != "eks-p3-node-group" || w.shrinks[0].Delta != 1 {
		t.Fatalf("shrinks = %+v, want p3 by 1", w.shrinks)
	}
	if got := summary(late); got != "eks-p2-node-group+1" {
		t.Fatalf("fallback = %q, want p2", got)
	}
}

// Seed story: scale from zero with a template that carries GPUs, labels and
// taints; a pod that selects the accelerator label and tolerates the taint.
func TestScaleFromZeroWithGPUTemplate(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("gpu-l4").Min(0).Max(4).Template(
		builder.Node("l4").CPU("8").Memory("32Gi").GPU(1).Label("cloud.google.com/gke-accelerator", "nvidia-l4").
			Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()))
	pod := builder.Pod("infer").CPU("2").GPU(1).NodeSelector("cloud.google.com/gke-accelerator", "nvidia-l4").Toleration("nvidia.com/gpu").Build()
	if got := summary(w.plan(opts("random"), t0, pod)); got != "gpu-l4+1" {
		t.Fatalf("scale-ups = %q, want gpu-l4+1", got)
	}
	intolerant := builder.Pod("intolerant").CPU("2").GPU(1).Build()
	plan := w.plan(opts("random"), t0, intolerant)
	if len(plan.ScaleUps) != 0 || len(plan.Pending) != 1 ||
		!strings.Contains(plan.Pending[0].Message(), "node group gpu-l4: template has taint nvidia.com/gpu=present:NoSchedule") {
		t.Fatalf("pod without toleration: plan %+v, pending %q", plan.ScaleUps, pendingMessages(plan))
	}
}

func pendingMessages(p scaleup.Plan) string {
	var out []string
	for _, pp := range p.Pending {
		out = append(out, pp.Message())
	}
	return strings.Join(out, " | ")
}
