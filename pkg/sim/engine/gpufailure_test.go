package engine_test

import (
	"strings"
	"testing"

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
