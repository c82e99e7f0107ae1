package scenario

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// GPUFailure breaks accelerators of a group's nodes at a point of the
// run: each of the Nodes oldest nodes with all their GPUs at At (default
// 1) loses GPUs of its allocatable (default all of them), its capacity
// unchanged, as a device plugin withdraws devices that fail their health
// checks. The pods on it keep running; node repair (--node-repair) is
// what replaces such a node.
type GPUFailure struct {
	At    metav1.Duration `json:"at"`
	Nodes int             `json:"nodes,omitempty"`
	GPUs  int64           `json:"gpus,omitempty"`
}

// validateGPUFailures reports failures that cannot happen to g's nodes.
func (g *NodeGroup) validateGPUFailures(bad func(field, format string, args ...any)) {
	if len(g.GPUFailures) == 0 {
		return
	}
	per := gpu.Allocatable(g.TemplateNode())
	if per == 0 {
		bad("gpuFailures", "the group's nodes have no GPUs to fail (capacity names none)")
		return
	}
	for i, f := range g.GPUFailures {
		field := fmt.Sprintf("gpuFailures[%d]", i)
		switch {
		case f.At.Duration < 0:
			bad(field+".at", "must not be negative, got %s", f.At.Duration)
		case f.Nodes < 0:
			bad(field+".nodes", "must not be negative, got %d", f.Nodes)
		case f.GPUs < 0 || f.GPUs > per:
			bad(field+".gpus", "must be from 0 (all) to the %d GPUs of a node, got %d", per, f.GPUs)
		}
	}
}
