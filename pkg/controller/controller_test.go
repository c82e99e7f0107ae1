package controller

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestEventLimiterRepeatsOnlyAfterQuietOrChange(t *testing.T) {
	l := newEventLimiter(5 * time.Minute)
	steps := []struct {
		msg  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", time.Minute, false}, {"b", 2 * time.Minute, true}, {"b", 8 * time.Minute, true},
	}
	for _, s := range steps {
		if got := l.allow("uid-1", s.msg, t0.Add(s.at)); got != s.want {
			t.Errorf("allow(%q at %v) = %v, want %v", s.msg, s.at, got, s.want)
		}
	}
	if !l.allow("uid-2", "a", t0.Add(time.Minute)) {
		t.Error("a different object was limited by another's event")
	}
}

func TestPriorityConfigMapKeys(t *testing.T) {
	for _, key := range []string{"priorities", "priority"} {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-priority-expander"},
			Data: map[string]string{key: "10:\n  - .*p2.*\n"}}
		p, err := PriorityConfigMap(cm)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if prio, ok := p.Priority("eks-p2-group"); !ok || prio != 10 {
			t.Errorf("key %q: priority = %d %v, want 10", key, prio, ok)
		}
	}
	if _, err := PriorityConfigMap(&v1.ConfigMap{}); err == nil || !strings.Contains(err.Error(), `"priorities"`) {
		t.Errorf("empty ConfigMap: err = %v, want one naming the key", err)
	}
}

// A pod that becomes pending starts a loop at once: marked unschedulable,
// or new with a bypassed scheduler; another scheduler's pod does not.
func TestPendingPodsTriggerALoop(t *testing.T) {
	for _, tc := range []struct {
		name, scheduler string
		marked, want    bool
	}{
		{"default scheduler, marked", "", true, true},
		{"default scheduler, not tried yet", "", false, false},
		{"bypassed scheduler, not tried yet", "kai-scheduler", false, true},
		{"other scheduler, marked", "volcano", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{trigger: make(chan struct{}, 1)}
			c.opts.Autoscaler.Pending.BypassedSchedulers = []string{"kai-scheduler"}
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{SchedulerName: tc.scheduler}}
			if tc.marked {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
			}
			c.maybeTrigger(p)
			if got := len(c.trigger) == 1; got != tc.want {
				t.Errorf("loop triggered %v, want %v", got, tc.want)
			}
		})
	}
}
