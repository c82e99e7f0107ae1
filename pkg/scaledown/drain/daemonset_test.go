package drain_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleDaemonSetPod(t *testing.T) {
	runRuleCases(t, drain.RuleDaemonSetPod{}, []ruleCase{
		{name: "pod controlled by a DaemonSet is skipped", pod: podOf("dcgm-exporter", controlledBy("DaemonSet", "dcgm")),
			want: drain.Skip, code: drain.CodeDaemonSetPod},
		{name: "pod annotated as a DaemonSet pod is skipped",
			pod:  podOf("agent", annotated(drain.AnnotationDaemonSetPod, "true")),
			want: drain.Skip, code: drain.CodeDaemonSetPod},
		{name: "annotation set to false does not make a DaemonSet pod",
			pod: podOf("agent", annotated(drain.AnnotationDaemonSetPod, "false")), want: drain.Undecided},
		{name: "ReplicaSet pod is left to later rules", pod: podOf("web"), want: drain.Undecided},
	})
}
