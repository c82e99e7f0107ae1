package drain_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// TestDefaultOrder checks the precedence between rules: the Cluster
// Autoscaler's order, where rules that let pods go come first and the
// PodDisruptionBudget rule comes last.
func TestDefaultOrder(t *testing.T) {
	web := map[string]string{"app": "web"}
	cases := []struct {
		name string
		pod  *v1.Pod
		ctx  *drain.Context
		opts func(*drain.Options)
		want drain.Outcome
		code drain.Code
	}{
		{name: "plain ReplicaSet pod is drained", pod: podOf("web"), want: drain.Drain},
		{name: "DaemonSet pod in kube-system is skipped, not blocked",
			pod: podOf("proxy", controlledBy("DaemonSet", "kube-proxy"), inNamespace(metav1.NamespaceSystem)), want: drain.Skip, code: drain.CodeDaemonSetPod},
		{name: "mirror pod with local storage is skipped", pod: podOf("etcd", annotated(drain.AnnotationMirrorPod, "x"), withVolume(hostPath("data"))),
			want: drain.Skip, code: drain.CodeMirrorPod},
		{name: "expendable pod without controller is skipped", pod: podOf("filler", priority(-100), func(p *podT) { p.OwnerReferences = nil }),
			want: drain.Skip, code: drain.CodeExpendablePod},
		{name: "expendable pod under an exhausted budget is skipped", pod: podOf("filler", priority(-100)),
			ctx: ctx(pdb("default", "web", 0, web)), want: drain.Skip, code: drain.CodeExpendablePod},
		{name: "long terminating pod marked not safe to evict is skipped", pod: podOf("old", deletedAgo(time.Hour), annotated(drain.AnnotationSafeToEvict, "false")),
			want: drain.Skip, code: drain.CodeLongTerminating},
		{name: "terminal pod without controller is skipped", pod: podOf("done", phase(v1.PodFailed, v1.RestartPolicyNever), func(p *podT) { p.OwnerReferences = nil }),
			want: drain.Skip, code: drain.CodeTerminalPod},
		{name: "missing controller is reported before not-safe-to-evict",
			pod:  podOf("bare", func(p *podT) { p.OwnerReferences = nil }, annotated(drain.AnnotationSafeToEvict, "false")),
			want: drain.Block, code: drain.CodeNotReplicated},
		{name: "not-safe-to-evict is reported before local storage",
			pod:  podOf("trainer", annotated(drain.AnnotationSafeToEvict, "false"), withVolume(emptyDir("ckpt", ""))),
			want: drain.Block, code: drain.CodeNotSafeToEvict},
		{name: "local storage is reported before the budget",
			pod: podOf("cache", withVolume(emptyDir("tmp", ""))), ctx: ctx(pdb("default", "web", 0, web)),
			want: drain.Block, code: drain.CodeLocalStorage},
		{name: "safe-to-evict true moves a bare kube-system pod with local storage",
			pod: podOf("tool", func(p *podT) { p.OwnerReferences = nil }, inNamespace(metav1.NamespaceSystem),
				withVolume(hostPath("x")), annotated(drain.AnnotationSafeToEvict, "true")), want: drain.Drain},
		{name: "safe-to-evict true still honours an exhausted budget", pod: podOf("web", annotated(drain.AnnotationSafeToEvict, "true")),
			ctx: ctx(pdb("default", "web", 0, web)), want: drain.Block, code: drain.CodeNotEnoughPDB},
		{name: "local storage is allowed when the option is off", pod: podOf("cache", withVolume(emptyDir("tmp", ""))),
			opts: func(o *drain.Options) { o.SkipNodesWithLocalStorage = false }, want: drain.Drain},
		{name: "kube-system pods move when the option is off", pod: podOf("dns", inNamespace(metav1.NamespaceSystem)),
			opts: func(o *drain.Options) { o.SkipNodesWithSystemPods = false }, want: drain.Drain},
		{name: "kube-system pod without budget blocks by default", pod: podOf("dns", inNamespace(metav1.NamespaceSystem)),
			want: drain.Block, code: drain.CodeSystemPod},
		{name: "custom controller pods move when the option is off", pod: podOf("w", controlledBy("RayCluster", "r")),
			opts: func(o *drain.Options) { o.SkipNodesWithCustomControllerPods = false }, want: drain.Drain},
		{name: "expendable cutoff comes from the options", pod: podOf("low", priority(-5)),
			opts: func(o *drain.Options) { o.ExpendablePodsPriorityCutoff = 0 }, want: drain.Skip, code: drain.CodeExpendablePod},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := drain.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			c := tc.ctx
			if c == nil {
				c = ctx()
			}
			got := drain.Default(o).Evaluate(c, tc.pod)
			if got.Outcome != tc.want || got.Code != tc.code {
				t.Fatalf("got %s/%s (%q), want %s/%s", got.Outcome, got.Code, got.Message, tc.want, tc.code)
			}
		})
	}
}

func TestDefaultLeavesOutSwitchedOffRules(t *testing.T) {
	names := func(rs drain.Rules) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			m[r.Name()] = true
		}
		return m
	}
	all := names(drain.Default(drain.DefaultOptions()))
	for _, n := range []string{"MirrorPod", "ExpendablePod", "LongTerminating", "DaemonSetPod", "TerminalPod",
		"NoController", "SystemPod", "SafeToEvict", "LocalStorage", "PodDisruptionBudget"} {
		if !all[n] {
			t.Errorf("default rules lack %s", n)
		}
	}
	o := drain.DefaultOptions()
	o.SkipNodesWithLocalStorage, o.SkipNodesWithSystemPods = false, false
	some := names(drain.Default(o))
	if some["LocalStorage"] || some["SystemPod"] {
		t.Error("switched-off rules must be left out")
	}
	if rs := drain.Default(o); rs[len(rs)-1].Name() != "PodDisruptionBudget" {
		t.Error("the PodDisruptionBudget rule must come last")
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[drain.Outcome]string{drain.Undecided: "Undecided", drain.Drain: "Drain", drain.Skip: "Skip", drain.Block: "Block"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q, want %q", o, o.String(), want)
		}
	}
}
