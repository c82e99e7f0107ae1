package drain_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func deletedAgo(d time.Duration) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ts := metav1.NewTime(now.Add(-d))
		p.DeletionTimestamp = &ts
	}
}

func grace(sec int64) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &sec }
}

func TestRuleLongTerminating(t *testing.T) {
	runRuleCases(t, drain.RuleLongTerminating{}, []ruleCase{
		{name: "deleted longer ago than grace period plus margin is skipped",
			pod: podOf("old", deletedAgo(2*time.Minute), grace(60)), want: drain.Skip, code: drain.CodeLongTerminating},
		{name: "deleted within grace period plus margin is judged normally",
			pod: podOf("recent", deletedAgo(80*time.Second), grace(60)), want: drain.Undecided},
		{name: "exactly at the deadline is not yet long terminating",
			pod: podOf("edge", deletedAgo(90*time.Second), grace(60)), want: drain.Undecided},
		{name: "unset grace period counts as the 30s API default",
			pod: podOf("default-grace", deletedAgo(61*time.Second)), want: drain.Skip, code: drain.CodeLongTerminating},
		{name: "unset grace period within default plus margin is judged normally",
			pod: podOf("default-grace-recent", deletedAgo(59*time.Second)), want: drain.Undecided},
		{name: "pod not being deleted is judged normally", pod: podOf("alive"), want: drain.Undecided},
	})
}
