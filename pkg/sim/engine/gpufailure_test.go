package engine_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// Two of a node's eight GPUs fail at 30m. With node repair the node is
// drained and removed once --repair-missing-gpus-after has passed, and
// scale-up brings a healthy node for its pod; without it the broken node
// stays to the end.
func TestGPUFailureIsRepairedWhenRepairIsOn(t *testing.T) {
	yaml := func(autoscaler string) string {
		return `name: gpu-failure
duration: 2h
` + autoscaler + `nodeGroups:
- {name: gpu, maxSize: 4, initialSize: 2, pricePerHour: 10, capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8"},
   gpuFailures: [{at: 30m, gpus: 2}]}
workloads:
- {name: train, pod: {requests: {cpu: "1", nvidia.com/gpu: "6"}}, deployment: {replicas: 2}}
`
	}
	kept := run(t, parse(t, yaml("")))
	repaired := run(t, parse(t, yaml("autoscaler: {node-repair: \"true\"}\n")))
	if kept.NodesRemoved != 0 || kept.NodesAdded != 0 {
		t.Errorf("repair off: removed %d, added %d; want the broken node kept", kept.NodesRemoved, kept.NodesAdded)
	}
	if repaired.NodesRemoved != 1 || repaired.NodesAdded != 1 || repaired.Evictions != 1 {
		t.Errorf("repair on: removed %d, added %d, evictions %d; want the broken node replaced, its one pod moved",
			repaired.NodesRemoved, repaired.NodesAdded, repaired.Evictions)
	}
}

func TestGPUFailureRefusals(t *testing.T) {
	for _, tc := range []struct{ group, want string }{
		{`{name: cpu, maxSize: 1, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi}, gpuFailures: [{at: 1m}]}`,
			"nodeGroups[0].gpuFailures: the group's nodes have no GPUs"},
		{`{name: gpu, maxSize: 1, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "8"}, gpuFailures: [{at: 1m, gpus: 9}]}`,
			"nodeGroups[0].gpuFailures[0].gpus: must be from 0 (all) to the 8 GPUs of a node, got 9"},
		{`{name: gpu, maxSize: 1, pricePerHour: 1, capacity: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "8"}, gpuFailures: [{at: -1m}]}`,
			"nodeGroups[0].gpuFailures[0].at: must not be negative"},
	} {
		_, err := scenario.Parse([]byte("name: x\nduration: 1h\nnodeGroups:\n- " + tc.group + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.group, err, tc.want)
		}
	}
}

// brokenJobScenario is one 8-GPU node running Jobs from the start; its
// GPUs fail at 30m (gpus: 0 is all of them).
func brokenJobScenario(autoscaler, jobs string, failedGPUs int) string {
	return `name: broken-jobs
duration: 4h
` + autoscaler + `nodeGroups:
- {name: gpu, maxSize: 4, initialSize: 1, pricePerHour: 10, capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8"},
   gpuFailures: [{at: 30m, gpus: ` + strconv.Itoa(failedGPUs) + `}]}
workloads:
- {name: train, pod: {requests: {cpu: "1", nvidia.com/gpu: "` + jobs + `"}}, jobs: [{at: 0s, count: ` + map[string]string{"8": "1", "4": "2"}[jobs] + `, duration: 1h}]}
`
}

// A Job on GPUs that fail makes no progress: without repair it never
// finishes, its run before the failure is lost and it sits on the broken
// node to the end; with repair it is moved after a while, does its run
// again and finishes.
func TestWorkOnBrokenGPUsIsLost(t *testing.T) {
	sc := parse(t, brokenJobScenario("", "8", 0))
	kept := run(t, sc)
	repaired := run(t, parse(t, brokenJobScenario("autoscaler: {node-repair: \"true\"}\n", "8", 0)))
	k, r := kept.GPUFailures, repaired.GPUFailures
	if k.Nodes != 1 || r.Nodes != 1 {
		t.Fatalf("broken nodes %d and %d, want 1", k.Nodes, r.Nodes)
	}
	failure := 30 * time.Minute
	for name, f := range map[string]engine.GPUFailureResult{"repair off": k, "repair on": r} {
		// Bound before the failure: its run up to it is lost.
		if f.LostPodHours <= 0 || f.LostPodHours > failure.Hours() {
			t.Errorf("%s: lost %.2f pod-h, want the run before the failure (0, %.2f]", name, f.LostPodHours, failure.Hours())
		}
		if f.LostGPUHours != 8*f.LostPodHours || f.StalledGPUHours != 8*f.StalledPodHours {
			t.Errorf("%s: %+v: GPU-hours are not 8 x the pod-hours of an 8-GPU pod", name, f)
		}
	}
	if kept.Finished != 0 {
		t.Errorf("repair off: %d Jobs finished on broken GPUs, want none", kept.Finished)
	}
	if want := (sc.Duration.Duration - failure).Hours(); k.StalledPodHours != want {
		t.Errorf("repair off: stalled %.2f pod-h, want the %.2f h from the failure to the end", k.StalledPodHours, want)
	}
	if repaired.Finished != 1 {
		t.Errorf("repair on: %d Jobs finished, want the moved one", repaired.Finished)
	}
	if r.StalledPodHours <= 0 || r.StalledPodHours >= k.StalledPodHours {
		t.Errorf("repair on: stalled %.2f pod-h, want the wait for repair, less than without it (%.2f)", r.StalledPodHours, k.StalledPodHours)
	}
	if kept.Unserved.JobPodHours <= repaired.Unserved.JobPodHours {
		t.Errorf("unserved Job work %.2f pod-h without repair, %.2f with: the Job that never finished is not counted",
			kept.Unserved.JobPodHours, repaired.Unserved.JobPodHours)
	}
}

// When two of eight GPUs fail under two 4-GPU Jobs, one Job's GPUs
// failed (the one bound last); the other runs on and finishes.
func TestPartialGPUFailureStopsOnlyThePodsThatDoNotFit(t *testing.T) {
	res := run(t, parse(t, brokenJobScenario("", "4", 2)))
	f := res.GPUFailures
	if res.Finished != 1 {
		t.Errorf("%d Jobs finished, want the one whose GPUs work", res.Finished)
	}
	if f.StalledPodHours <= 0 || f.StalledGPUHours != 4*f.StalledPodHours || f.LostGPUHours != 4*f.LostPodHours {
		t.Errorf("%+v: want one 4-GPU pod stalled", f)
	}
}
