package pending_test

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/pending"
)

// pod builds a pod of scheduler (empty: the field unset) with a
// PodScheduled condition of the given status and reason (no condition
// when status is "").
func pod(name, scheduler string, status v1.ConditionStatus, reason string) *v1.Pod {
	p := builder.Pod(name).CPU("1").Build()
	p.Spec.SchedulerName = scheduler
	if status != "" {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: status, Reason: reason}}
	}
	return p
}

func TestClassify(t *testing.T) {
	kai := pending.Options{BypassedSchedulers: []string{"kai-scheduler"}}
	both := pending.Options{BypassedSchedulers: []string{"default-scheduler", "kai-scheduler"}}
	deleted := pod("gone", "", v1.ConditionFalse, v1.PodReasonUnschedulable)
	deleted.DeletionTimestamp = &metav1.Time{}
	failed := pod("failed", "kai-scheduler", "", "")
	failed.Status.Phase = v1.PodFailed
	bound := pod("bound", "kai-scheduler", "", "")
	bound.Spec.NodeName = "n1"
	cases := []struct {
		name string
		pod  *v1.Pod
		opts pending.Options
		want pending.Verdict
	}{
		{"default scheduler, marked unschedulable", pod("p", "default-scheduler", v1.ConditionFalse, v1.PodReasonUnschedulable), pending.Options{}, pending.Unschedulable},
		{"an empty scheduler name is the default one", pod("p", "", v1.ConditionFalse, v1.PodReasonUnschedulable), pending.Options{}, pending.Unschedulable},
		{"default scheduler, not tried yet, waits for the mark", pod("p", "", "", ""), kai, pending.NotPending},
		{"default scheduler bypassed, not tried yet, counts", pod("p", "", "", ""), both, pending.Unprocessed},
		{"bypassed scheduler, no condition, counts at once", pod("p", "kai-scheduler", "", ""), kai, pending.Unprocessed},
		{"bypassed scheduler, condition false without reason, counts", pod("p", "kai-scheduler", v1.ConditionFalse, ""), kai, pending.Unprocessed},
		{"bypassed scheduler, marked unschedulable", pod("p", "kai-scheduler", v1.ConditionFalse, v1.PodReasonUnschedulable), kai, pending.Unschedulable},
		{"default scheduler, gated, not pending", pod("p", "", v1.ConditionFalse, "SchedulingGated"), pending.Options{}, pending.NotPending},
		{"bypassed scheduler, gated, not pending", pod("p", "kai-scheduler", v1.ConditionFalse, "SchedulingGated"), kai, pending.NotPending},
		{"bypassed scheduler, scheduler error, not pending", pod("p", "kai-scheduler", v1.ConditionFalse, "SchedulerError"), kai, pending.NotPending},
		{"bypassed scheduler, being bound, not pending", pod("p", "kai-scheduler", v1.ConditionTrue, ""), kai, pending.NotPending},
		{"other scheduler, marked unschedulable, left alone", pod("p", "volcano", v1.ConditionFalse, v1.PodReasonUnschedulable), kai, pending.OtherScheduler},
		{"other scheduler, not tried, left alone", pod("p", "volcano", "", ""), pending.Options{}, pending.OtherScheduler},
		{"deleted pods are not pending", deleted, pending.Options{}, pending.NotPending},
		{"terminal pods are not pending", failed, kai, pending.NotPending},
		{"bound pods are not pending", bound, kai, pending.NotPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pending.Classify(tc.pod, tc.opts); got != tc.want {
				t.Errorf("verdict = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSelectCountsOtherSchedulers(t *testing.T) {
	pods := []*v1.Pod{
		pod("a", "", v1.ConditionFalse, v1.PodReasonUnschedulable),
		pod("b", "volcano", "", ""),
		pod("c", "kai-scheduler", "", ""),
		pod("d", "yunikorn", v1.ConditionFalse, v1.PodReasonUnschedulable),
		pod("e", "volcano", v1.ConditionFalse, v1.PodReasonUnschedulable),
		pod("f", "", "", ""),
	}
	sel := pending.Select(pods, pending.Options{BypassedSchedulers: []string{"kai-scheduler"}})
	var names []string
	for _, p := range sel.Pods {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "c"}) || sel.Unprocessed != 1 {
		t.Errorf("pending %v (%d unprocessed), want [a c] (1)", names, sel.Unprocessed)
	}
	want := []pending.SchedulerPods{{Scheduler: "volcano", Pods: 2}, {Scheduler: "yunikorn", Pods: 1}}
	if !reflect.DeepEqual(sel.OtherSchedulers, want) {
		t.Errorf("left alone %+v, want %+v", sel.OtherSchedulers, want)
	}
	if sel := pending.Select(pods[:1], pending.Options{}); sel.OtherSchedulers != nil {
		t.Errorf("nothing left alone, got %+v", sel.OtherSchedulers)
	}
}

func TestOptionsRefuseAnEmptyName(t *testing.T) {
	err := pending.Options{BypassedSchedulers: []string{"kai-scheduler", ""}}.Validate()
	if err == nil || err.Error() != `--bypassed-scheduler-names: a scheduler name must not be empty, got ["kai-scheduler" ""]` {
		t.Errorf("err = %v", err)
	}
}

// Pods a scheduler already tried (the simulator's) need no mark: the
// scheduler name alone decides.
func TestSelectTried(t *testing.T) {
	pods := []*v1.Pod{pod("a", "", "", ""), pod("b", "volcano", "", ""), pod("c", "kai-scheduler", "", "")}
	sel := pending.SelectTried(pods, pending.Options{BypassedSchedulers: []string{"kai-scheduler"}})
	if len(sel.Pods) != 2 || sel.Pods[0].Name != "a" || sel.Pods[1].Name != "c" {
		t.Errorf("pending %v, want a and c", sel.Pods)
	}
	if want := []pending.SchedulerPods{{Scheduler: "volcano", Pods: 1}}; !reflect.DeepEqual(sel.OtherSchedulers, want) {
		t.Errorf("left alone %+v, want %+v", sel.OtherSchedulers, want)
	}
}
