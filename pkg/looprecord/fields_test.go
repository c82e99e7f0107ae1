package looprecord_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/forecast"
	"github.com/gpuscale/gpuscale/pkg/looprecord"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// A record holds every field of autoscaler.Input, and each comes back as
// it went in: a field added to the contract and not to the record fails
// here, before a replay silently decides on less than the live loop did.
func TestRecordHoldsEveryInputField(t *testing.T) {
	rec := reflect.TypeOf(looprecord.Input{})
	typ := reflect.TypeOf(autoscaler.Input{})
	for i := range typ.NumField() {
		if _, ok := rec.FieldByName(typ.Field(i).Name); !ok {
			t.Errorf("looprecord.Input has no field %s of autoscaler.Input", typ.Field(i).Name)
		}
	}

	snap := snapshot.New()
	if err := snap.SetNodeGroup(builder.NodeGroup("pool").Max(3).Target(1).Build()); err != nil {
		t.Fatal(err)
	}
	if err := snap.AddNodeInGroup(builder.Node("n1").CPU("4").Memory("16Gi").Build(), "pool"); err != nil {
		t.Fatal(err)
	}
	prio, err := expander.ParsePriorities("10:\n  - .*pool.*\n")
	if err != nil {
		t.Fatal(err)
	}
	in := autoscaler.Input{
		Now:                  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Snapshot:             snap,
		Pending:              []*v1.Pod{builder.Pod("p").CPU("1").Build()},
		OtherSchedulers:      []pending.SchedulerPods{{Scheduler: "volcano", Pods: 2}},
		DaemonSets:           []*appsv1.DaemonSet{{}},
		PDBs:                 []*policyv1.PodDisruptionBudget{{}},
		Outcomes:             []autoscaler.Outcome{autoscaler.RemovalDone{Node: "n0", Group: "pool"}},
		ProvisioningRequests: []provisioningrequest.Request{{}},
		Replicas:             drain.Replicas{{Namespace: "ns", Kind: "ReplicaSet", Name: "web-1"}: 3},
		Priorities:           prio,
		CapacityBuffers:      []capacitybuffer.Buffer{{Namespace: "ns", Name: "warm", Replicas: 1}},
		Demand:               []forecast.Demand{{Namespace: "ns", Name: "llm", Value: 12, PerReplica: 4}},
	}
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test's Input leaves %s unset: give it a value", typ.Field(i).Name)
		}
	}
	r, err := looprecord.FromLoop(in, autoscaler.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := looprecord.Read(bytes.NewReader(line))
	if err != nil || len(back) != 1 {
		t.Fatalf("read back: %v, %d records", err, len(back))
	}
	out, err := back[0].Input.ToInput()
	if err != nil {
		t.Fatal(err)
	}
	w := reflect.ValueOf(out)
	for i := range v.NumField() {
		name := typ.Field(i).Name
		switch name {
		case "Snapshot":
			if got, want := out.Snapshot.Export(), in.Snapshot.Export(); !reflect.DeepEqual(got, want) {
				t.Errorf("Snapshot came back as %+v, want %+v", got, want)
			}
		case "Priorities":
			if !out.Priorities.Equal(in.Priorities) {
				t.Errorf("Priorities came back as %v, want %v", out.Priorities, in.Priorities)
			}
		default:
			if !reflect.DeepEqual(w.Field(i).Interface(), v.Field(i).Interface()) {
				t.Errorf("%s came back as %#v, want %#v", name, w.Field(i).Interface(), v.Field(i).Interface())
			}
		}
	}
}
