package classes_test

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/sim/bound/classes"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

var gpuTaint = v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}

func requests(cpu, mem string, gpus int64) v1.ResourceList {
	r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		r["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return r
}

func testScenario() *scenario.Scenario {
	tolerate := []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	return &scenario.Scenario{Name: "classes", NodeGroups: []scenario.NodeGroup{
		{Name: "cpu", MaxSize: 5, PricePerHour: 1, Capacity: requests("4", "16Gi", 0)},
		{Name: "gpu-a", MaxSize: 5, PricePerHour: 3, Capacity: requests("8", "32Gi", 1),
			Labels: map[string]string{"model": "a"}, Taints: []v1.Taint{gpuTaint}},
		{Name: "gpu-b", MaxSize: 5, PricePerHour: 4, Capacity: requests("8", "32Gi", 2),
			Labels: map[string]string{"model": "b"}, Taints: []v1.Taint{gpuTaint}, Zone: "z1"},
	}, Workloads: []scenario.Workload{
		{Name: "web", Pod: scenario.PodTemplate{Requests: requests("1", "2Gi", 0)},
			Deployment: &scenario.Deployment{Replicas: 1}},
		{Name: "train-b", Pod: scenario.PodTemplate{Requests: requests("2", "8Gi", 1), Tolerations: tolerate,
			NodeAffinity: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: "model", Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}}}}}},
			Jobs: []scenario.JobBatch{{At: metav1.Duration{Duration: time.Minute}, Count: 2, Duration: metav1.Duration{Duration: time.Hour}}}},
		{Name: "any-gpu-in-z1", Pod: scenario.PodTemplate{Requests: requests("2", "8Gi", 1), Tolerations: tolerate,
			NodeSelector: map[string]string{v1.LabelTopologyZone: "z1"}},
			Jobs: []scenario.JobBatch{{Count: 1, Duration: metav1.Duration{Duration: time.Hour}}}},
		{Name: "any-gpu", Pod: scenario.PodTemplate{Requests: requests("1", "4Gi", 1), Tolerations: tolerate}},
	}}
}

func TestFromRun(t *testing.T) {
	sc := testScenario()
	web := bound.Amount{CPU: 1, MemoryGiB: 2}
	train := bound.Amount{CPU: 2, MemoryGiB: 8, GPUs: 1}
	// The run's demand as the engine records it: the Jobs' pods one by
	// one, the Deployment at 1 replica from 0 and 3 from 5m.
	res := &engine.Result{Duration: 2 * time.Hour, Shapes: make([]bound.Shape, 3),
		Demand: []bound.Change{
			{At: 0, Delta: web},
			{At: time.Minute, Delta: train}, {At: time.Minute + time.Hour, Delta: train.Scale(-1)},
			{At: time.Minute, Delta: train}, {At: time.Minute + time.Hour, Delta: train.Scale(-1)},
			{At: 0, Delta: train}, {At: time.Hour, Delta: train.Scale(-1)},
			{At: 5 * time.Minute, Delta: web.Scale(2)},
		},
		PodDemand: []bound.PodChange{
			{At: 0, Class: 0, Delta: 1},
			{At: time.Minute, Class: 1, Delta: 1}, {At: time.Minute + time.Hour, Class: 1, Delta: -1},
			{At: time.Minute, Class: 1, Delta: 1}, {At: time.Minute + time.Hour, Class: 1, Delta: -1},
			{At: 0, Class: 2, Delta: 1}, {At: time.Hour, Class: 2, Delta: -1},
			{At: 5 * time.Minute, Class: 0, Delta: 2},
		},
	}
	in, err := classes.FromRun(sc, res)
	if err != nil {
		t.Fatal(err)
	}
	gotShapes := map[string][]int{}
	for _, c := range in.Classes {
		gotShapes[c.Name] = c.Shapes
	}
	wantShapes := map[string][]int{"web": {0}, "train-b": {2}, "any-gpu-in-z1": {2}, "any-gpu": {0, 1, 2}} // resources aside: ComputePods drops shapes a pod does not fit
	if !reflect.DeepEqual(gotShapes, wantShapes) {
		t.Errorf("eligible shapes %v, want %v", gotShapes, wantShapes)
	}
	if in.Classes[1].Pod != train {
		t.Errorf("train-b's pod %+v, want %+v", in.Classes[1].Pod, train)
	}
	wantChanges := res.PodDemand
	if !reflect.DeepEqual(in.Changes, wantChanges) {
		t.Errorf("changes %+v, want %+v", in.Changes, wantChanges)
	}
}

// TestFromRunTellsDeploymentsApart runs two Deployments whose requests
// divide one another (2 pods of one request what 1 of the other does): the
// engine's pod changes name the workload, so each change goes to its own.
func TestFromRunTellsDeploymentsApart(t *testing.T) {
	sc := &scenario.Scenario{Name: "two-webs", Duration: metav1.Duration{Duration: 30 * time.Minute},
		NodeGroups: []scenario.NodeGroup{{Name: "cpu", MinSize: 1, MaxSize: 5, PricePerHour: 1, Capacity: requests("4", "16Gi", 0)}},
		Workloads: []scenario.Workload{
			{Name: "web", Pod: scenario.PodTemplate{Requests: requests("1", "2Gi", 0)}, Deployment: &scenario.Deployment{Replicas: 2}},
			{Name: "web-twice", Pod: scenario.PodTemplate{Requests: requests("2", "4Gi", 0)}, Deployment: &scenario.Deployment{Replicas: 1}},
		}}
	sc.SetDefaults()
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := engine.OptionsFor(sc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	in, err := classes.FromRun(sc, res)
	if err != nil {
		t.Fatal(err)
	}
	want := []bound.PodChange{{At: 0, Class: 0, Delta: 2}, {At: 0, Class: 1, Delta: 1}}
	if !reflect.DeepEqual(in.Changes, want) {
		t.Errorf("changes %+v, want %+v", in.Changes, want)
	}
}

// TestFromRunRefusesAnotherScenario gives FromRun a run whose pod changes
// do not match the scenario's workloads.
func TestFromRunRefusesAnotherScenario(t *testing.T) {
	sc := testScenario()
	for name, res := range map[string]*engine.Result{
		"request differs": {Duration: time.Hour, Shapes: make([]bound.Shape, 3),
			Demand:    []bound.Change{{At: 0, Delta: bound.Amount{CPU: 2, MemoryGiB: 4}}},
			PodDemand: []bound.PodChange{{At: 0, Class: 0, Delta: 1}}},
		"workload out of range": {Duration: time.Hour, Shapes: make([]bound.Shape, 3),
			Demand:    []bound.Change{{At: 0, Delta: bound.Amount{CPU: 2, MemoryGiB: 4}}},
			PodDemand: []bound.PodChange{{At: 0, Class: 9, Delta: 1}}},
		"no pod changes": {Duration: time.Hour, Shapes: make([]bound.Shape, 3),
			Demand: []bound.Change{{At: 0, Delta: bound.Amount{CPU: 2, MemoryGiB: 4}}}},
	} {
		if _, err := classes.FromRun(sc, res); err == nil {
			t.Errorf("%s: got no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
