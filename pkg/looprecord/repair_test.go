package looprecord_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/looprecord"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// A run in which node repair removes a node whose GPUs failed replays the
// same: repair's memory (when a node was first seen unhealthy) is made of
// the inputs alone.
func TestReplayOfANodeRepair(t *testing.T) {
	s, err := scenario.Parse([]byte(`name: repair
duration: 2h
autoscaler: {node-repair: "true"}
nodeGroups:
- {name: gpu, maxSize: 4, initialSize: 2, pricePerHour: 10, capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8"},
   gpuFailures: [{at: 30m, gpus: 2}]}
workloads:
- {name: train, pod: {requests: {cpu: "1", nvidia.com/gpu: "6"}}, deployment: {replicas: 2}}
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
	repaired := false
	for _, r := range records {
		for _, a := range r.Plan.Actions {
			repaired = repaired || (a.Type == "RemoveNodes" && strings.Contains(string(a.Value), `"Repair":"repair: `))
		}
	}
	if !repaired {
		t.Fatal("the record has no repair removal")
	}
	diffs, err := looprecord.Replay(o.Autoscaler, records, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("%d differences, first: %s", len(diffs), diffs[0])
	}
}
