package controller

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// repairEvents tells each unhealthy node why it is unhealthy and what node
// repair does about it: a Warning while it is held, naming the code and
// when it is due. The event limiter repeats a message only after its quiet
// time, so a node waiting out its toleration gets one event, not one per
// loop. The removal itself is told by the ScaleDown event.
func (c *Controller) repairEvents(st status.Status) {
	if st.Repair == nil {
		return
	}
	for _, n := range st.Repair.Nodes {
		if n.State != status.RepairHeld {
			continue
		}
		c.events.node(n.Name, v1.EventTypeWarning, status.EventNodeUnhealthy,
			"node repair: "+n.Message+"; held ("+n.Held+"): "+n.HeldMessage,
			map[string]string{status.AnnotationNodeGroup: n.Group, status.AnnotationRepairReason: n.Reason})
	}
}
