package classes_test

import (
	"reflect"
	"strings"
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
	res := &engine.Result{Duration: 2 * time.Hour, Shapes: make([]bound.Shape, 3), Demand: []bound.Change{
		{At: 0, Delta: web},
		{At: time.Minute, Delta: train}, {At: time.Minute + time.Hour, Delta: train.Scale(-1)},
		{At: time.Minute, Delta: train}, {At: time.Minute + time.Hour, Delta: train.Scale(-1)},
		{At: 0, Delta: train}, {At: time.Hour, Delta: train.Scale(-1)},
		{At: 5 * time.Minute, Delta: web.Scale(2)},
	}}
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
	wantChanges := []bound.PodChange{
		{At: time.Minute, Class: 1, Delta: 2}, {At: time.Minute + time.Hour, Class: 1, Delta: -2},
		{At: 0, Class: 2, Delta: 1}, {At: time.Hour, Class: 2, Delta: -1},
		{At: 0, Class: 0, Delta: 1}, {At: 5 * time.Minute, Class: 0, Delta: 2},
	}
	if !reflect.DeepEqual(in.Changes, wantChanges) {
		t.Errorf("changes %+v, want %+v", in.Changes, wantChanges)
	}
}

func TestFromRunRefusesAmbiguousDeployments(t *testing.T) {
	sc := testScenario()
	sc.Workloads = append(sc.Workloads, scenario.Workload{Name: "web-twice", Pod: scenario.PodTemplate{Requests: requests("2", "4Gi", 0)},
		Deployment: &scenario.Deployment{Replicas: 1}})
	res := &engine.Result{Duration: time.Hour, Shapes: make([]bound.Shape, 3),
		Demand: []bound.Change{{At: 0, Delta: bound.Amount{CPU: 2, MemoryGiB: 4}}}}
	_, err := classes.FromRun(sc, res)
	if err == nil || !strings.Contains(err.Error(), "web-twice") {
		t.Errorf("got %v, want the two Deployments named", err)
	}
}
