package explain

import (
	"context"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// explain cluster names each unhealthy node, why, and why it waits.
func TestClusterNodeRepair(t *testing.T) {
	st := loop()
	at := st.Time
	st.Repair = &status.Repair{Nodes: []status.RepairNode{
		{Name: "gpu-1", Group: "gpu", Reason: "GPUsMissing", Message: "nvidia.com/gpu allocatable 6 of capacity 8", Since: at,
			Due: at.Add(10 * time.Minute), State: status.RepairHeld, Held: "Tolerating", HeldMessage: "repaired at 2026-03-01T10:10:00Z"},
		{Name: "gpu-2", Group: "gpu", Reason: "UnhealthyCondition", Message: "condition AcceleratedHardwareReady=False", State: status.RepairRepairing},
	}}
	r, err := explainer(t, nil, rendered(t, st)).Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "node repair: node gpu-1 (group gpu) is unhealthy: nvidia.com/gpu allocatable 6 of capacity 8; held (Tolerating): repaired at",
		"node repair: node gpu-2 (group gpu) is unhealthy: condition AcceleratedHardwareReady=False; its removal started")
	if r.Cluster.Repair == nil || len(r.Cluster.Repair.Nodes) != 2 {
		t.Errorf("structured answer %+v", r.Cluster.Repair)
	}
}
