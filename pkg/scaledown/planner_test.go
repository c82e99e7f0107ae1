package scaledown_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// planCase is one behaviour of a single planning loop.
type planCase struct {
	name  string
	build func(c *cluster)
	opts  func(o *scaledown.Options)
	input func(in *scaledown.Input)
	// wantDelete lists the nodes removed now, in plan order.
	wantDelete []string
	// wantKept maps kept nodes to their reason.
	wantKept map[string]scaledown.Reason
	check    func(t *testing.T, p scaledown.Plan)
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			tc.build(c)
			opts := immediate()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			p := planOnce(t, c, opts, tc.input)
			if got := deleted(p); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("removed %v, want %v; kept:%s", got, tc.wantDelete, keptSummary(p))
			}
			for node, reason := range tc.wantKept {
				if k := kept(t, p, node); k.Reason != reason {
					t.Errorf("node %s kept for %s (%s), want %s", node, k.Reason, k.Message, reason)
				}
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// busy is a node used at 62.5% cpu, above the threshold, with 1.5 cpu free.
func busy(c *cluster, name, group string) {
	c.node(node4(name).Build(), group, rs(name+"-load", "2500m"))
}

func TestPlanMovesPodsAndRemovesNodes(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "single-replica ReplicaSet pod is restarted elsewhere and its underused node removed",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("web-0", "500m"))
				busy(c, "b", "pool")
			},
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"b": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				r := removal(t, p, "a")
				if got := evictions(r); !slices.Equal(got, []string{"web-0->b"}) || r.Empty || r.Group != "pool" {
					t.Errorf("removal %+v evicts %v, want web-0->b from a non-empty pool node", r, got)
				}
				if r.Utilization.Resource != v1.ResourceCPU || r.Utilization.Value != 0.125 {
					t.Errorf("utilization %+v, want cpu 0.125", r.Utilization)
				}
			},
		},
		{
			name: "empty node is removed with nothing to evict",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool")
				busy(c, "b", "pool")
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); !r.Empty || len(r.Evict) != 0 {
					t.Errorf("empty node removal %+v should be empty with no evictions", r)
				}
			},
		},
		{
			name: "node used exactly at the threshold is kept",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("half", "2"))
				c.node(node4("b").Build(), "pool", rs("idle", "100m"))
			},
			wantDelete: []string{"b"},
			wantKept:   map[string]scaledown.Reason{"a": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "a"); !strings.Contains(k.Message, "cpu requested is 50%") || !strings.Contains(k.Message, "--scale-down-utilization-threshold") {
					t.Errorf("message %q should give the cpu share, the threshold and the flag", k.Message)
				}
			},
		},
		{
			name: "memory counts when it is the larger share",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(node4("a").Build(), "pool", controlledBy(builder.Pod("cache").CPU("100m").Memory("10Gi").Build(), "ReplicaSet", "cache"))
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "a"); !strings.HasPrefix(k.Message, "memory requested is 62.5%") {
					t.Errorf("message %q should name memory at 62.5%%", k.Message)
				}
			},
		},
		{
			name: "two half-empty nodes do not both go when only one can absorb the other's pods",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("p-a", "1800m"))
				c.node(node4("b").Build(), "pool", rs("p-b", "1800m"))
			},
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"b": scaledown.ReasonNoPlaceToMovePods},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "a")); !slices.Equal(got, []string{"p-a->b"}) {
					t.Errorf("evictions %v, want p-a->b", got)
				}
				if k := kept(t, p, "b"); k.Pod == nil || k.Pod.Name != "p-b" || !strings.Contains(k.Message, "pod default/p-b") {
					t.Errorf("b should be kept for its pod p-b, got %q", k.Message)
				}
			},
		},
		{
			name: "a pod too big for every other node keeps its node, with the scheduler's reason",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("big", "1800m"))
				busy(c, "b", "pool")
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonNoPlaceToMovePods},
			check: func(t *testing.T, p scaledown.Plan) {
				k := kept(t, p, "a")
				if want := "pod default/big fits on no other node (first tried b: Insufficient cpu"; !strings.HasPrefix(k.Message, want) {
					t.Errorf("message %q, want it to start with %q", k.Message, want)
				}
			},
		},
		{
			name: "nodes that stay are preferred over removal candidates as destinations",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool", rs("p-a", "400m"))
				busy(c, "b", "pool")
				c.node(node4("c").Build(), "pool", rs("p-c", "800m"))
			},
			opts:       func(o *scaledown.Options) { o.MaxDrainParallelism = 0 },
			wantDelete: []string{"a", "c"},
			check: func(t *testing.T, p scaledown.Plan) {
				got := append(evictions(removal(t, p, "a")), evictions(removal(t, p, "c"))...)
				if !slices.Equal(got, []string{"p-a->b", "p-c->b"}) {
					t.Errorf("evictions %v, want both pods on the node that stays", got)
				}
			},
		},
		{
			name: "pods go to the first node that stays, in name order",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool", rs("p-a", "400m"))
				busy(c, "b", "pool")
				trainer := rs("trainer", "400m")
				trainer.Annotations = map[string]string{drain.AnnotationSafeToEvict: "false"}
				c.node(node4("c").Build(), "pool", trainer)
			},
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonBlockedByPod},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "a")); !slices.Equal(got, []string{"p-a->b"}) {
					t.Errorf("evictions %v, want p-a->b", got)
				}
			},
		},
		{
			name: "pods are not planned onto unready nodes",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("p-a", "1"))
				c.node(unready(node4("b").Build()), "pool", rs("p-b", "2500m"))
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonNoPlaceToMovePods, "b": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "a"); !strings.Contains(k.Message, "no other node can take pods") {
					t.Errorf("message %q should say no node can take the pod", k.Message)
				}
			},
		},
		{
			name: "pods are not planned onto nodes whose network is unavailable",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("p-a", "1"))
				b := node4("b").Build()
				b.Status.Conditions = append(b.Status.Conditions, v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue})
				c.node(b, "pool", rs("p-b", "2500m"))
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonNoPlaceToMovePods},
		},
		{
			name: "node outside any group is kept but takes pods",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(node4("a").Build(), "pool", rs("p-a", "1"))
				c.node(node4("static").Build(), "")
			},
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"static": scaledown.ReasonNotAutoscaled},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "a")); !slices.Equal(got, []string{"p-a->static"}) {
					t.Errorf("evictions %v, want p-a->static", got)
				}
			},
		},
		{
			name: "a pod moved twice in one loop is reported at its final node",
			// x takes p1 (only x matches its selector) and so is full; p2 then
			// lands on y, and when y goes too, p2 moves on to the static node.
			// x cannot go: p1 has nowhere else to run.
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(builder.Node("static").CPU("8").Memory("32Gi").Build(), "")
				c.node(node4("x").Label("pool", "special").Build(), "pool", rs("x-load", "3800m"))
				c.node(node4("y").Build(), "pool", rs("y-load", "500m"))
				p1 := controlledBy(builder.Pod("p1").CPU("200m").NodeSelector("pool", "special").Build(), "ReplicaSet", "special")
				c.node(node4("a").Build(), "pool", p1, rs("p2", "100m"))
			},
			opts:       func(o *scaledown.Options) { o.UtilizationThreshold, o.MaxDrainParallelism = 0.99, 0 },
			wantDelete: []string{"a", "y"},
			wantKept:   map[string]scaledown.Reason{"x": scaledown.ReasonNoPlaceToMovePods},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "a")); !slices.Equal(got, []string{"p1->x", "p2->static"}) {
					t.Errorf("evictions of a %v, want p1->x, p2->static", got)
				}
				if got := evictions(removal(t, p, "y")); !slices.Equal(got, []string{"y-load->static"}) {
					t.Errorf("evictions of y %v, want only y's own pod", got)
				}
				if k := kept(t, p, "x"); k.Pod == nil || k.Pod.Name != "p1" || k.Pod.Spec.NodeName != "a" {
					t.Errorf("x should be kept for the original pod p1 from a, got %+v", k.Pod)
				}
			},
		},
	})
}

func TestPlanGPUNodes(t *testing.T) {
	gpuPod := func(name string, gpus int64) *v1.Pod {
		return controlledBy(builder.Pod(name).CPU("1").GPU(gpus).Toleration("nvidia.com/gpu").Build(), "ReplicaSet", "train-"+name)
	}
	gpuNode := func(name string) *v1.Node { return node4(name).GPU(4).Build() }
	runPlanCases(t, []planCase{
		{
			name: "GPU node with idle GPUs but busy cpu is removed",
			build: func(c *cluster) {
				c.group("gpu", 0, 1).group("cpu", 0, 1)
				c.node(gpuNode("g"), "gpu", rs("cpu-heavy", "3"))
				c.node(builder.Node("c").CPU("8").Memory("32Gi").Build(), "cpu", rs("c-load", "5"))
			},
			wantDelete: []string{"g"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				r := removal(t, p, "g")
				if !r.Utilization.GPUNode || r.Utilization.Resource != "nvidia.com/gpu" || r.Utilization.Value != 0 {
					t.Errorf("GPU node utilization %+v, want judged by GPUs at 0", r.Utilization)
				}
				if got := evictions(r); !slices.Equal(got, []string{"cpu-heavy->c"}) {
					t.Errorf("evictions %v, want cpu-heavy->c", got)
				}
			},
		},
		{
			name: "GPU node whose GPU pod has no free GPU elsewhere is kept",
			build: func(c *cluster) {
				c.group("gpu", 0, 2)
				c.node(gpuNode("g1"), "gpu", gpuPod("small", 1))
				c.node(gpuNode("g2"), "gpu", gpuPod("full", 4))
			},
			wantKept: map[string]scaledown.Reason{"g1": scaledown.ReasonNoPlaceToMovePods, "g2": scaledown.ReasonNotUnderutilized},
			check: func(t *testing.T, p scaledown.Plan) {
				k := kept(t, p, "g1")
				if k.Pod == nil || k.Pod.Name != "small" || !strings.Contains(k.Message, "Insufficient nvidia.com/gpu") {
					t.Errorf("g1 should be kept for pod small lacking GPUs, got %+v", k)
				}
				if k := kept(t, p, "g2"); !strings.HasPrefix(k.Message, "nvidia.com/gpu requested is 100%") ||
					!strings.Contains(k.Message, "--scale-down-gpu-utilization-threshold") {
					t.Errorf("g2 message %q should judge GPUs against the GPU threshold", k.Message)
				}
			},
		},
		{
			name: "GPU pod moves to a GPU node with a free GPU",
			build: func(c *cluster) {
				c.group("gpu", 0, 2)
				c.node(gpuNode("g1"), "gpu", gpuPod("small", 1))
				c.node(gpuNode("g2"), "gpu", gpuPod("big", 3))
			},
			wantDelete: []string{"g1"},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "g1")); !slices.Equal(got, []string{"small->g2"}) {
					t.Errorf("evictions %v, want small->g2", got)
				}
			},
		},
		{
			name: "GPU node is judged by its GPU threshold, not the cpu one",
			build: func(c *cluster) {
				c.group("gpu", 0, 2)
				c.node(gpuNode("g1"), "gpu", gpuPod("two", 2))
				c.node(gpuNode("g2"), "gpu", gpuPod("one", 1))
			},
			opts: func(o *scaledown.Options) { o.GPUUtilizationThreshold = 0.6 },
			// g2 (25%) goes first and its pod moves to g1; g1 (50%) is below
			// 0.6 too but its pods no longer fit anywhere.
			wantDelete: []string{"g2"},
			wantKept:   map[string]scaledown.Reason{"g1": scaledown.ReasonNoPlaceToMovePods},
		},
	})
}

func TestPlanDrainRulesKeepNodes(t *testing.T) {
	withAnnotation := func(p *v1.Pod, k, v string) *v1.Pod {
		return podEdit(p, func(p *v1.Pod) { p.Annotations = map[string]string{k: v} })
	}
	blocked := func(code drain.Code) func(t *testing.T, p scaledown.Plan) {
		return func(t *testing.T, p scaledown.Plan) {
			if k := kept(t, p, "a"); k.PodCode != code || k.Pod == nil || !strings.Contains(k.Message, string(code)) {
				t.Errorf("a kept with pod code %s (%q), want %s naming the pod", k.PodCode, k.Message, code)
			}
		}
	}
	base := func(pods ...*v1.Pod) func(c *cluster) {
		return func(c *cluster) {
			c.group("pool", 0, 2)
			c.node(node4("a").Build(), "pool", pods...)
			busy(c, "b", "pool")
		}
	}
	keptA := map[string]scaledown.Reason{"a": scaledown.ReasonBlockedByPod}
	runPlanCases(t, []planCase{
		{name: "PodDisruptionBudget with zero disruptions allowed keeps the node",
			build:    func(c *cluster) { base(rs("web-0", "500m"))(c); c.pdb("web", 0, "web") },
			wantKept: keptA, check: blocked(drain.CodeNotEnoughPDB)},
		{name: "PodDisruptionBudget with a disruption left lets the node go",
			build: func(c *cluster) { base(rs("web-0", "500m"))(c); c.pdb("web", 1, "web") }, wantDelete: []string{"a"}},
		{name: "pod with local storage keeps the node",
			build: base(podEdit(rs("cache", "500m"), func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			})),
			wantKept: keptA, check: blocked(drain.CodeLocalStorage)},
		{name: "local storage is allowed when --skip-nodes-with-local-storage=false",
			build: base(podEdit(rs("cache", "500m"), func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			})),
			opts: func(o *scaledown.Options) { o.SkipNodesWithLocalStorage = false }, wantDelete: []string{"a"}},
		{name: "pod without a controller keeps the node",
			build: base(builder.Pod("bare").CPU("500m").Build()), wantKept: keptA, check: blocked(drain.CodeNotReplicated)},
		{name: "pod without a controller moves when annotated safe to evict",
			build:      base(withAnnotation(builder.Pod("bare").CPU("500m").Build(), drain.AnnotationSafeToEvict, "true")),
			wantDelete: []string{"a"}},
		{name: "pod annotated not safe to evict keeps the node",
			build:    base(withAnnotation(rs("trainer", "500m"), drain.AnnotationSafeToEvict, "false")),
			wantKept: keptA, check: blocked(drain.CodeNotSafeToEvict)},
		{name: "kube-system pod without a budget keeps the node",
			build:    base(podEdit(rs("dns", "500m"), func(p *v1.Pod) { p.Namespace = metav1.NamespaceSystem })),
			wantKept: keptA, check: blocked(drain.CodeSystemPod)},
		{name: "kube-system pod moves when --skip-nodes-with-system-pods=false",
			build: base(podEdit(rs("dns", "500m"), func(p *v1.Pod) { p.Namespace = metav1.NamespaceSystem })),
			opts:  func(o *scaledown.Options) { o.SkipNodesWithSystemPods = false }, wantDelete: []string{"a"}},
		{name: "custom controller pod keeps the node by default",
			build:    base(controlledBy(builder.Pod("w").CPU("500m").Build(), "RayCluster", "ray")),
			wantKept: keptA, check: blocked(drain.CodeCustomController)},
	})
}

func TestPlanPodsThatNeedNoHome(t *testing.T) {
	ds := func(name string) *v1.Pod {
		return controlledBy(builder.Pod(name).CPU("100m").Build(), "DaemonSet", "agent")
	}
	mirror := func(name string) *v1.Pod {
		return podEdit(builder.Pod(name).CPU("100m").Build(), func(p *v1.Pod) {
			p.Annotations = map[string]string{drain.AnnotationMirrorPod: "x"}
		})
	}
	expendable := func(name, cpu string) *v1.Pod {
		prio := int32(-100)
		return podEdit(builder.Pod(name).CPU(cpu).Build(), func(p *v1.Pod) { p.Spec.Priority = &prio })
	}
	runPlanCases(t, []planCase{
		{
			name: "DaemonSet and mirror pods do not keep a node, and empty nodes keep their DaemonSet pods",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(node4("a").Build(), "pool", ds("agent-a"), mirror("static-a"))
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); !r.Empty || r.DaemonSetPods != nil {
					t.Errorf("removal %+v should be empty with no DaemonSet evictions (--daemonset-eviction-for-empty-nodes=false)", r)
				}
			},
		},
		{
			name: "DaemonSet pods of empty nodes are evicted when asked",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(node4("a").Build(), "pool", ds("agent-a"))
			},
			opts:       func(o *scaledown.Options) { o.DaemonSetEvictionForEmptyNodes = true },
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); len(r.DaemonSetPods) != 1 || r.DaemonSetPods[0].Name != "agent-a" {
					t.Errorf("DaemonSet pods %v, want agent-a", r.DaemonSetPods)
				}
			},
		},
		{
			name: "DaemonSet pods of drained nodes are listed for eviction",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", ds("agent-a"), rs("web-0", "500m"))
				busy(c, "b", "pool")
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				r := removal(t, p, "a")
				if len(r.DaemonSetPods) != 1 || r.DaemonSetPods[0].Name != "agent-a" || !slices.Equal(evictions(r), []string{"web-0->b"}) {
					t.Errorf("removal %+v should evict web-0 and list agent-a", r)
				}
			},
		},
		{
			name: "expendable pods neither keep a node nor count towards its use",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", expendable("filler", "3"))
				busy(c, "b", "pool")
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); !r.Empty || r.Utilization.Value != 0 {
					t.Errorf("removal %+v should be empty at zero utilization", r)
				}
			},
		},
		{
			name: "room taken by expendable pods is room for moving pods",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("web-0", "1"))
				c.node(node4("b").Build(), "pool", rs("b-load", "2500m"), expendable("filler", "1500m"))
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if got := evictions(removal(t, p, "a")); !slices.Equal(got, []string{"web-0->b"}) {
					t.Errorf("evictions %v, want web-0->b", got)
				}
			},
		},
	})
}

func TestPlanEligibility(t *testing.T) {
	tainted := func(name string, at int64) *v1.Node {
		return node4(name).Taint(disruption.TaintToBeDeleted, strconv.FormatInt(at, 10), v1.TaintEffectNoSchedule).Build()
	}
	runPlanCases(t, []planCase{
		{
			name: "scale-down-disabled annotation keeps an empty node",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(annotateNode(node4("a").Build(), disruption.AnnotationScaleDownDisabled, "true"), "pool")
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonScaleDownDisabled},
		},
		{
			name: "scale-down-disabled annotation set to false has no effect",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(annotateNode(node4("a").Build(), disruption.AnnotationScaleDownDisabled, "false"), "pool")
			},
			wantDelete: []string{"a"},
		},
		{
			name: "group at its minimum size keeps its nodes",
			build: func(c *cluster) {
				c.group("pool", 2, 2)
				c.node(node4("a").Build(), "pool").node(node4("b").Build(), "pool")
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonMinSize, "b": scaledown.ReasonMinSize},
		},
		{
			name: "group above its minimum shrinks down to it and no further",
			build: func(c *cluster) {
				c.group("pool", 1, 3)
				c.node(node4("a").Build(), "pool").node(node4("b").Build(), "pool").node(node4("c").Build(), "pool")
			},
			wantDelete: []string{"a", "b"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonMinSize},
		},
		{
			name: "deletions in progress count against the minimum size",
			build: func(c *cluster) {
				c.group("pool", 1, 2)
				c.node(node4("a").Build(), "pool").node(node4("b").Build(), "pool")
			},
			input: func(in *scaledown.Input) {
				in.Deleting = []scaledown.Deletion{{Node: "a", Group: "pool"}}
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonBeingDeleted, "b": scaledown.ReasonMinSize},
		},
		{
			name: "node with a recent ToBeDeleted taint is being deleted",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(tainted("a", t0.Add(-time.Minute).Unix()), "pool")
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonBeingDeleted},
		},
		{
			name: "node with a ToBeDeleted taint older than the deletion time is judged again",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(tainted("a", t0.Add(-10*time.Minute).Unix()), "pool")
			},
			wantDelete: []string{"a"},
		},
		{
			name: "cluster-wide minimum cores keeps a node",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool")
				busy(c, "b", "pool")
			},
			opts:     func(o *scaledown.Options) { o.Limits.Cores.Min = 8 },
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonClusterMinimum},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "a"); !strings.Contains(k.Message, "--cores-total") {
					t.Errorf("message %q should name --cores-total", k.Message)
				}
			},
		},
		{
			name: "cluster-wide minimum below the total lets the node go",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool")
				busy(c, "b", "pool")
			},
			opts:       func(o *scaledown.Options) { o.Limits.Cores.Min = 4 },
			wantDelete: []string{"a"},
		},
		{
			name: "unready nodes are kept when unready removal is off",
			build: func(c *cluster) {
				c.group("pool", 0, 1)
				c.node(unready(node4("a").Build()), "pool")
			},
			opts:     func(o *scaledown.Options) { o.UnreadyEnabled = false },
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonUnreadyDisabled},
		},
	})
}

func TestPlanPodDisruptionBudgetAcrossNodes(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "allowance taken by one node is not available to the next",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool", rs("web-a", "500m"))
				busy(c, "b", "pool")
				c.node(node4("c").Build(), "pool", rs("web-c", "500m"))
				c.pdb("web", 1, "web")
			},
			opts:       func(o *scaledown.Options) { o.MaxDrainParallelism = 0 },
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonBlockedByPod},
			check: func(t *testing.T, p scaledown.Plan) {
				if k := kept(t, p, "c"); k.PodCode != drain.CodeNotEnoughPDB {
					t.Errorf("c kept by %s, want %s", k.PodCode, drain.CodeNotEnoughPDB)
				}
			},
		},
		{
			name: "node with more covered pods than the allowance goes with one-by-one evictions",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("web-0", "300m"), rs("web-1", "300m"))
				busy(c, "b", "pool")
				c.pdb("web", 1, "web")
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); !r.EvictOneByOne || len(r.Evict) != 2 {
					t.Errorf("removal %+v should evict both pods one by one", r)
				}
			},
		},
		{
			name: "allowance that covers every pod allows parallel evictions",
			build: func(c *cluster) {
				c.group("pool", 0, 2)
				c.node(node4("a").Build(), "pool", rs("web-0", "300m"), rs("web-1", "300m"))
				busy(c, "b", "pool")
				c.pdb("web", 2, "web")
			},
			wantDelete: []string{"a"},
			check: func(t *testing.T, p scaledown.Plan) {
				if r := removal(t, p, "a"); r.EvictOneByOne {
					t.Errorf("removal %+v should not need one-by-one evictions", r)
				}
			},
		},
	})
}
