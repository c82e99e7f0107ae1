package looprecord_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/looprecord"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// record runs the seed walkthrough in the simulator, recording its loops.
func record(t *testing.T) (autoscaler.Options, []looprecord.Record) {
	t.Helper()
	s, err := scenario.Builtin("seed-walkthrough")
	if err != nil {
		t.Fatal(err)
	}
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := looprecord.NewRecorder(&buf)
	o.Recorder = rec
	if _, err := engine.Run(o); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	records, err := looprecord.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return o.Autoscaler, records
}

func TestReplayGivesTheSamePlans(t *testing.T) {
	opts, records := record(t)
	kinds := map[string]bool{}
	for _, r := range records {
		for _, a := range r.Plan.Actions {
			kinds[a.Type] = true
		}
		for _, o := range r.Input.Outcomes {
			kinds[o.Type] = true
		}
	}
	for _, k := range []string{"ScaleUp", "RemoveNodes", "ScaleUpResult", "RemovalDone"} {
		if !kinds[k] {
			t.Fatalf("the record has no %s (kinds %v)", k, kinds)
		}
	}
	diffs, err := looprecord.Replay(opts, records, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("%d differences, first: %s", len(diffs), diffs[0])
	}
}

// A record whose outcomes were lost does not replay the same: the replay
// can tell.
func TestReplayFindsADifference(t *testing.T) {
	opts, records := record(t)
	dropped := false
	for i := range records {
		for j, o := range records[i].Input.Outcomes {
			if o.Type == "ScaleUpResult" {
				records[i].Input.Outcomes = append(records[i].Input.Outcomes[:j], records[i].Input.Outcomes[j+1:]...)
				dropped = true
				break
			}
		}
		if dropped {
			break
		}
	}
	diffs, err := looprecord.Replay(opts, records, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) == 0 || !strings.Contains(diffs[0].String(), "differ") {
		t.Fatal("a record without its scale-up result replayed the same")
	}
}

// The pods left alone for another scheduler are part of a loop's input:
// recorded, they replay to the same status.
func TestReplayKeepsPodsOfOtherSchedulers(t *testing.T) {
	s, err := scenario.Parse([]byte(`
name: other-scheduler
duration: 10m
nodeGroups:
- name: cpu
  maxSize: 5
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: batch
  pod: {requests: {cpu: "2"}, schedulerName: volcano}
  jobs: [{at: 0s, count: 3, duration: 1h}]
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := engine.OptionsFor(s)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := looprecord.NewRecorder(&buf)
	o.Recorder, o.EveryLoop = rec, true
	if _, err := engine.Run(o); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	records, err := looprecord.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) == 0 || len(records[0].Input.OtherSchedulers) != 1 || records[0].Input.OtherSchedulers[0].Pods != 3 {
		t.Fatalf("records %d, first input's other schedulers %+v, want volcano: 3", len(records), records[0].Input.OtherSchedulers)
	}
	diffs, err := looprecord.Replay(o.Autoscaler, records, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("%d differences, first: %s", len(diffs), diffs[0])
	}
}
