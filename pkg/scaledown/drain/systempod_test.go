package drain_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleSystemPod(t *testing.T) {
	sys := inNamespace(metav1.NamespaceSystem)
	runRuleCases(t, drain.RuleSystemPod{}, []ruleCase{
		{name: "kube-system pod without a budget blocks", pod: podOf("coredns", sys),
			want: drain.Block, code: drain.CodeSystemPod, inMessage: []string{"kube-system/coredns", "PodDisruptionBudget"}},
		{name: "kube-system pod covered by a budget may move", pod: podOf("coredns", sys),
			ctx: ctx(pdb(metav1.NamespaceSystem, "dns", 1, map[string]string{"app": "web"})), want: drain.Undecided},
		{name: "a budget with no disruptions left still counts as cover", pod: podOf("coredns", sys),
			ctx: ctx(pdb(metav1.NamespaceSystem, "dns", 0, map[string]string{"app": "web"})), want: drain.Undecided},
		{name: "a budget in another namespace is no cover", pod: podOf("coredns", sys),
			ctx: ctx(pdb("default", "dns", 1, map[string]string{"app": "web"})), want: drain.Block, code: drain.CodeSystemPod},
		{name: "a budget selecting other pods is no cover", pod: podOf("coredns", sys),
			ctx: ctx(pdb(metav1.NamespaceSystem, "dns", 1, map[string]string{"app": "other"})), want: drain.Block, code: drain.CodeSystemPod},
		{name: "safe-to-evict true lets a kube-system pod move", pod: podOf("coredns", sys, annotated(drain.AnnotationSafeToEvict, "true")),
			want: drain.Undecided},
		{name: "pods of other namespaces are left to later rules", pod: podOf("web"), want: drain.Undecided},
	})
}

// Upstream's system rule since 1.33: a kube-system pod without a budget
// blocks for --blocking-system-pod-distruption-timeout from its creation.
func TestRuleSystemPodTimeout(t *testing.T) {
	sys := inNamespace(metav1.NamespaceSystem)
	created := func(ago time.Duration) func(*podT) {
		return func(p *podT) { p.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
	}
	hour := drain.RuleSystemPod{DisruptionTimeout: time.Hour}
	runRuleCases(t, hour, []ruleCase{
		{name: "younger than the timeout blocks", pod: podOf("coredns", sys, created(20*time.Minute)),
			want: drain.Block, code: drain.CodeSystemPod,
			inMessage: []string{"created 20m0s ago", "once 1h0m0s old", "--blocking-system-pod-distruption-timeout"}},
		{name: "exactly the timeout old still blocks", pod: podOf("coredns", sys, created(time.Hour)),
			want: drain.Block, code: drain.CodeSystemPod},
		{name: "older than the timeout is left to later rules", pod: podOf("coredns", sys, created(time.Hour+time.Second)),
			want: drain.Undecided},
		{name: "no creation time keeps blocking", pod: podOf("coredns", sys),
			want: drain.Block, code: drain.CodeSystemPod, inMessage: []string{"of unknown age"}},
	})
	runRuleCases(t, drain.RuleSystemPod{}, []ruleCase{
		{name: "a timeout of 0 lets it go at once", pod: podOf("coredns", sys, created(time.Second)), want: drain.Undecided},
	})
	// Past the timeout the later rules still speak.
	old := podOf("coredns", sys, created(2*time.Hour), annotated(drain.AnnotationSafeToEvict, "false"))
	if v := drain.Default(drain.DefaultOptions()).Evaluate(ctx(), old); v.Outcome != drain.Block || v.Code != drain.CodeNotSafeToEvict {
		t.Errorf("old kube-system pod annotated safe-to-evict=false: %s/%s, want it kept by that annotation", v.Outcome, v.Code)
	}
	young := podOf("coredns", sys, created(time.Minute))
	if v := drain.Default(drain.DefaultOptions()).Evaluate(ctx(), young); v.Code != drain.CodeSystemPod {
		t.Errorf("default rules: a young kube-system pod gives %s/%s, want it blocked for the default hour", v.Outcome, v.Code)
	}
}
