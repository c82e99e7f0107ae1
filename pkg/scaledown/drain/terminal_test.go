package drain_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func phase(ph v1.PodPhase, rp v1.RestartPolicy) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = ph; p.Spec.RestartPolicy = rp }
}

func TestRuleTerminalPod(t *testing.T) {
	runRuleCases(t, drain.RuleTerminalPod{}, []ruleCase{
		{name: "failed pod is skipped", pod: podOf("crashed", phase(v1.PodFailed, v1.RestartPolicyAlways)),
			want: drain.Skip, code: drain.CodeTerminalPod},
		{name: "succeeded pod that never restarts is skipped", pod: podOf("done", phase(v1.PodSucceeded, v1.RestartPolicyNever)),
			want: drain.Skip, code: drain.CodeTerminalPod},
		{name: "succeeded pod restarting on failure is skipped", pod: podOf("done", phase(v1.PodSucceeded, v1.RestartPolicyOnFailure)),
			want: drain.Skip, code: drain.CodeTerminalPod},
		{name: "succeeded pod with restart policy Always is not terminal", pod: podOf("odd", phase(v1.PodSucceeded, v1.RestartPolicyAlways)),
			want: drain.Undecided},
		{name: "running pod is judged normally", pod: podOf("run", phase(v1.PodRunning, v1.RestartPolicyNever)), want: drain.Undecided},
	})
}
