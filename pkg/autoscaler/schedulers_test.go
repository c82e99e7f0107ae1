package autoscaler_test

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// The status says which schedulers' pods were left alone, how many and
// why, and which schedulers are bypassed; a status document carries both.
func TestStatusCountsPodsOfOtherSchedulers(t *testing.T) {
	a := newAutoscaler(t, func(o *autoscaler.Options) { o.Pending.BypassedSchedulers = []string{"kai-scheduler"} })
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: snapshot.New(),
		OtherSchedulers: []pending.SchedulerPods{{Scheduler: "volcano", Pods: 3}}})
	st := plan.Status
	if len(st.BypassedSchedulers) != 1 || st.BypassedSchedulers[0] != "kai-scheduler" {
		t.Errorf("bypassed %q, want [kai-scheduler]", st.BypassedSchedulers)
	}
	if len(st.OtherSchedulers) != 1 {
		t.Fatalf("other schedulers %+v, want volcano's", st.OtherSchedulers)
	}
	o := st.OtherSchedulers[0]
	if o.Scheduler != "volcano" || o.Pods != 3 || o.Reason != status.ReasonSchedulerNotBypassed ||
		!strings.Contains(o.Message, `3 pod(s) of scheduler "volcano" left alone`) || !strings.Contains(o.Message, "--bypassed-scheduler-names") {
		t.Errorf("entry %+v", o)
	}
	doc, text := status.Render(st, nil, status.DefaultRenderOptions())
	if got, ok := doc.OtherScheduler("volcano"); !ok || got.Pods != 3 || !doc.Bypassed("kai-scheduler") {
		t.Errorf("document: %+v, %v; bypassed %q", got, ok, doc.BypassedSchedulers)
	}
	if !strings.Contains(text, "otherSchedulers:") || !strings.Contains(text, "SchedulerNotBypassed") {
		t.Errorf("text lacks the entry:\n%s", text)
	}
	if quiet := step(t, newAutoscaler(t), autoscaler.Input{Now: t0, Snapshot: snapshot.New()}).Status; quiet.OtherSchedulers != nil || quiet.BypassedSchedulers != nil {
		t.Errorf("nothing left alone, got %+v %q", quiet.OtherSchedulers, quiet.BypassedSchedulers)
	}
}
