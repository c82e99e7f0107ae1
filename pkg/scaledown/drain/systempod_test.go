package drain_test

import (
	"testing"

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
