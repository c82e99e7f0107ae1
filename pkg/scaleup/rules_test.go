package scaleup_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

func TestGPUAwareness(t *testing.T) {
	t.Run("cpu-only pods prefer groups without GPUs", func(t *testing.T) {
		w := newWorld(t).
			group(builder.NodeGroup("cpu").Template(cpuTemplate("c"))).
			group(builder.NodeGroup("gpu").Template(builder.Node("g").CPU("32").Memory("128Gi").GPU(4).Build()))
		for seed := int64(0); seed < 6; seed++ {
			o := opts("random")
			o.Seed = seed
			if got := summary(w.plan(o, t0, builder.Pod("web").CPU("1").Build())); got != "cpu+1" {
				t.Fatalf("seed %d: scale-ups = %q, want cpu+1", seed, got)
			}
		}
	})
	for _, accel := range []struct{ name, resource string }{
		{"tpu", "google.com/tpu"}, {"amd", "amd.com/gpu"}, {"neuron", "aws.amazon.com/neuron"}, {"gaudi", "habana.ai/gaudi"},
	} {
		t.Run("cpu-only pods avoid "+accel.name+" groups", func(t *testing.T) {
			w := newWorld(t).
				group(builder.NodeGroup("cpu").Template(cpuTemplate("c"))).
				group(builder.NodeGroup(accel.name).Template(builder.Node("a").CPU("32").Memory("128Gi").
					Allocatable(v1.ResourceName(accel.resource), "4").Build()))
			for seed := int64(0); seed < 6; seed++ {
				o := opts("random")
				o.Seed = seed
				if got := summary(w.plan(o, t0, builder.Pod("web").CPU("1").Build())); got != "cpu+1" {
					t.Fatalf("seed %d: scale-ups = %q, want cpu+1", seed, got)
				}
			}
		})
	}
	t.Run("cpu-only pods use a GPU group when nothing else fits", func(t *testing.T) {
		w := newWorld(t).
			group(builder.NodeGroup("cpu").Template(cpuTemplate("c"))).
			group(builder.NodeGroup("gpu").Template(builder.Node("g").CPU("32").Memory("128Gi").GPU(4).Build()))
		if got := summary(w.plan(opts("random"), t0, builder.Pod("big").CPU("16").Build())); got != "gpu+1" {
			t.Fatalf("scale-ups = %q, want gpu+1", got)
		}
	})
	t.Run("a GPU pod never lands on a template without its GPU", func(t *testing.T) {
		w := newWorld(t).group(builder.NodeGroup("cpu").Template(cpuTemplate("c")))
		plan := w.plan(opts("random"), t0, gpuPod("train", 1))
		if len(plan.ScaleUps) != 0 {
			t.Fatalf("scaled %q for a GPU pod", summary(plan))
		}
		if msg := pendingMessages(plan); !strings.Contains(msg, "node group cpu: template has taint") &&
			!strings.Contains(msg, "node group cpu: Insufficient nvidia.com/gpu (wants 1, template has 0)") {
			t.Errorf("reason = %q", msg)
		}
	})
	t.Run("MIG profile pods need a template with that profile", func(t *testing.T) {
		w := newWorld(t).
			group(builder.NodeGroup("mig-1g").Template(builder.Node("m1").Allocatable("nvidia.com/mig-1g.10gb", "7").Build())).
			group(builder.NodeGroup("mig-3g").Template(builder.Node("m3").Allocatable("nvidia.com/mig-3g.40gb", "2").Build()))
		pods := replicas(3, func(i int) *v1.Pod {
			return builder.Pod(fmt.Sprintf("m%d", i)).Request("nvidia.com/mig-3g.40gb", "1").Build()
		})
		if got := summary(w.plan(opts("random"), t0, pods...)); got != "mig-3g+2" {
			t.Fatalf("scale-ups = %q, want mig-3g+2", got)
		}
	})
}

// A GPU node that is Ready but has not advertised its GPUs is an upcoming
// node until --max-node-startup-time: no second node for the same pod.
func TestGPUNodeWithoutAdvertisedGPUsIsUpcoming(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("gpu").Target(1).Template(gpuTemplate("g", 1)))
	registered := builder.Node("gpu-node-1").CPU("32").Memory("128Gi").
		Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build() // no accelerator label, no GPUs yet
	w.node("gpu", registered, t0)
	pod := gpuPod("train", 1)

	plan := w.plan(opts("random"), t0.Add(5*time.Minute), pod)
	if len(plan.ScaleUps) != 0 || len(plan.WillSchedule) != 1 {
		t.Fatalf("within startup time: scale-ups %q, will schedule %d; want none and 1", summary(plan), len(plan.WillSchedule))
	}
	if len(plan.AwaitingGPU) != 1 || plan.AwaitingGPU[0] != "gpu-node-1" {
		t.Errorf("awaiting = %v, want [gpu-node-1]", plan.AwaitingGPU)
	}
	late := w.plan(opts("random"), t0.Add(16*time.Minute), pod)
	if got := summary(late); got != "gpu+1" || len(late.GPUOverdue) != 1 {
		t.Fatalf("after startup time: scale-ups %q, overdue %v; want gpu+1 and the node reported", got, late.GPUOverdue)
	}
}

func TestPodsThatFitExistingOrUpcomingNodesDoNotScale(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("cpu").Target(2).Template(cpuTemplate("c")))
	w.node("cpu", builder.Node("cpu-1").CPU("8").Memory("32Gi").Build(), t0)
	// cpu-1 takes two 3-cpu pods, the upcoming node two more; the fifth needs a node.
	pods := replicas(5, func(i int) *v1.Pod { return owned(builder.Pod(fmt.Sprintf("p%d", i)).CPU("3").Build(), "rs") })
	plan := w.plan(opts("random"), t0, pods...)
	if len(plan.WillSchedule) != 4 || summary(plan) != "cpu+1" || len(plan.Triggered) != 1 {
		t.Fatalf("will schedule %d, scale-ups %q, triggered %d; want 4, cpu+1, 1",
			len(plan.WillSchedule), summary(plan), len(plan.Triggered))
	}
	if fmt.Sprint(plan.Placements) != "[cpu-1 cpu-1 upcoming-cpu-0 upcoming-cpu-0]" {
		t.Errorf("placements = %v, want two on cpu-1 and two on the upcoming node", plan.Placements)
	}
}

func TestLimits(t *testing.T) {
	pods := replicas(10, func(i int) *v1.Pod { return owned(builder.Pod(fmt.Sprintf("p%d", i)).CPU("6").Build(), "rs") })
	cases := []struct {
		name   string
		group  *builder.GroupBuilder
		tune   func(*scaleup.Options)
		want   string
		reason string
	}{
		{"group max", builder.NodeGroup("cpu").Max(3), nil, "cpu+3", "max"},
		{"max-nodes-per-scaleup", builder.NodeGroup("cpu").Max(100), func(o *scaleup.Options) { o.MaxNodesPerScaleUp = 4 }, "cpu+4", ""},
		{"max-nodes-total counts existing nodes", builder.NodeGroup("cpu").Max(100).Target(1),
			func(o *scaleup.Options) { o.Limits.MaxNodesTotal = 3 }, "cpu+2", ""},
		{"cores-total", builder.NodeGroup("cpu").Max(100), func(o *scaleup.Options) { o.Limits.Cores = limits.Range{Max: 40} }, "cpu+5", ""},
		{"gpu-total", builder.NodeGroup("cpu").Max(100), func(o *scaleup.Options) {
			o.Limits.GPUs = map[string]limits.Range{"nvidia.com/gpu": {Max: 0}}
		}, "cpu+10", ""},
		{"at max already", builder.NodeGroup("cpu").Max(1).Target(1), nil, "", "max size 1 reached"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t).group(tc.group.Template(cpuTemplate("c")))
			if g := w.snap.NodeGroup("cpu"); g.TargetSize == 1 {
				w.node("cpu", builder.Node("cpu-0").CPU("8").Memory("32Gi").Build(), t0)
				w.pod(builder.Pod("busy").CPU("8").OnNode("cpu-0").Build())
			}
			o := opts("random")
			if tc.tune != nil {
				tc.tune(&o)
			}
			plan := w.plan(o, t0, pods...)
			if got := summary(plan); got != tc.want {
				t.Fatalf("scale-ups = %q, want %q (pending: %s)", got, tc.want, pendingMessages(plan))
			}
			if tc.reason != "" && !strings.Contains(pendingMessages(plan), tc.reason) {
				t.Errorf("pending reasons %q lack %q", pendingMessages(plan), tc.reason)
			}
		})
	}
}

func TestExpendableAndNewPods(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("cpu").Template(cpuTemplate("c")))
	low := int32(-20)
	expendable := builder.Pod("overprovision").CPU("1").Build()
	expendable.Spec.Priority = &low
	young := builder.Pod("young").CPU("1").Build()
	young.CreationTimestamp = metav1.NewTime(t0.Add(-5 * time.Second))
	o := opts("random")
	o.NewPodScaleUpDelay = 30 * time.Second
	plan := w.plan(o, t0, expendable, young)
	if len(plan.ScaleUps) != 0 || len(plan.Pending) != 2 {
		t.Fatalf("scale-ups %q, pending %d; want none and 2", summary(plan), len(plan.Pending))
	}
	msg := pendingMessages(plan)
	for _, want := range []string{"priority -20 is below --expendable-pods-priority-cutoff -10", "younger than --new-pod-scale-up-delay 30s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reasons %q lack %q", msg, want)
		}
	}
	old := builder.Pod("old").CPU("1").Build()
	old.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	if got := summary(w.plan(o, t0, old)); got != "cpu+1" {
		t.Errorf("a pod older than the delay: scale-ups %q, want cpu+1", got)
	}
}

func TestBackoffGrowsAndResets(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("gpu").Template(gpuTemplate("g", 1)))
	pod := gpuPod("train", 1)
	now := t0
	var untils []time.Duration
	for i := 0; i < 5; i++ {
		plan := w.plan(opts("random"), now, pod)
		if summary(plan) != "gpu+1" {
			t.Fatalf("round %d: scale-ups %q, want gpu+1", i, summary(plan))
		}
		w.apply(plan, now)
		now = now.Add(16 * time.Minute)
		w.apply(w.plan(opts("random"), now, pod), now) // times out, shrinks, backs off
		b, _ := w.state.BackedOff("gpu", now)
		untils = append(untils, b.Until.Sub(now))
		now = b.Until
	}
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	if fmt.Sprint(untils) != fmt.Sprint(want) {
		t.Fatalf("backoffs = %v, want %v", untils, want)
	}
	plan := w.plan(opts("random"), now, pod)
	w.apply(plan, now)
	now = now.Add(16 * time.Minute)
	w.plan(opts("random"), now.Add(4*time.Hour), pod) // a failure long after the last one
	b, _ := w.state.BackedOff("gpu", now.Add(4*time.Hour))
	if got := b.Until.Sub(now.Add(4 * time.Hour)); got != 5*time.Minute {
		t.Errorf("backoff after 3h without failure = %v, want 5m", got)
	}
}

func TestDaemonSetOverheadCountsOnTemplates(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("cpu").Template(cpuTemplate("c")))
	w.ds = append(w.ds, daemonSet("node-exporter", "1"))
	// 8-cpu nodes with a 1-cpu DaemonSet: two 3-cpu pods per node, not a third 2-cpu pod.
	pods := replicas(4, func(i int) *v1.Pod { return owned(builder.Pod(fmt.Sprintf("p%d", i)).CPU("3").Build(), "rs") })
	if got := summary(w.plan(opts("random"), t0, pods...)); got != "cpu+2" {
		t.Fatalf("scale-ups = %q, want cpu+2", got)
	}
	w2 := newWorld(t).group(builder.NodeGroup("cpu").Template(cpuTemplate("c")))
	w2.ds = append(w2.ds, daemonSet("big-agent", "3"))
	if got := summary(w2.plan(opts("random"), t0, pods...)); got != "cpu+4" {
		t.Fatalf("with a 3-cpu DaemonSet: scale-ups = %q, want cpu+4", got)
	}
}

func TestEquivalentPodsShareOneClass(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("cpu").Max(1000).Template(cpuTemplate("c")))
	pods := replicas(5000, func(i int) *v1.Pod { return builder.Pod(fmt.Sprintf("p%05d", i)).CPU("1").Label("app", "web").Build() })
	pods = append(pods, builder.Pod("odd").CPU("1").Label("app", "db").Build())
	plan := w.plan(opts("random"), t0, pods...)
	if got := summary(plan); got != "cpu+626" {
		t.Fatalf("scale-ups = %q, want cpu+626 (5001 one-cpu pods, 8 per node)", got)
	}
	if len(plan.Triggered) != 5001 {
		t.Errorf("triggered %d, want 5001", len(plan.Triggered))
	}
}

func TestPodsLeftForAnotherGroupSayWhich(t *testing.T) {
	w := newWorld(t).
		group(builder.NodeGroup("a").Template(builder.Node("ta").CPU("8").Label("pool", "a").Build())).
		group(builder.NodeGroup("b").Template(builder.Node("tb").CPU("8").Label("pool", "b").Build()))
	onlyA := replicas(3, func(i int) *v1.Pod {
		return builder.Pod(fmt.Sprintf("a%d", i)).CPU("1").NodeSelector("pool", "a").Build()
	})
	onlyB := builder.Pod("b0").CPU("1").NodeSelector("pool", "b").Build()
	plan := w.plan(opts("most-pods"), t0, append(onlyA, onlyB)...)
	if got := summary(plan); got != "a+1" {
		t.Fatalf("scale-ups = %q, want a+1", got)
	}
	msg := pendingMessages(plan)
	for _, want := range []string{"node group a: chosen for other pods; 0 of 1", "node group b: could take 1 of these pods; node group a was chosen this loop"} {
		if !strings.Contains(msg, want) {
			t.Errorf("pending %q lacks %q", msg, want)
		}
	}
}

// A node that registered but is not Ready yet (the node lifecycle
// controller's not-ready taint still on it) is upcoming, not a reason to
// order another node.
func TestStartingNodeIsUpcoming(t *testing.T) {
	w := newWorld(t).group(builder.NodeGroup("cpu").Target(1).Template(cpuTemplate("c")))
	n := builder.Node("cpu-1").CPU("8").Memory("32Gi").Taint(v1.TaintNodeNotReady, "", v1.TaintEffectNoSchedule).Build()
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	w.node("cpu", n, t0)
	pod := builder.Pod("web").CPU("2").Build()
	plan := w.plan(opts("random"), t0.Add(30*time.Second), pod)
	if len(plan.ScaleUps) != 0 || len(plan.WillSchedule) != 1 || fmt.Sprint(plan.Starting) != "[cpu-1]" {
		t.Fatalf("scale-ups %q, will schedule %d, starting %v; want none, 1, [cpu-1]", summary(plan), len(plan.WillSchedule), plan.Starting)
	}
	// Long after start-up, a node that never became Ready no longer counts.
	if got := summary(w.plan(opts("random"), t0.Add(20*time.Minute), pod)); got != "cpu+1" {
		t.Fatalf("after --max-node-startup-time: scale-ups %q, want cpu+1", got)
	}
}
