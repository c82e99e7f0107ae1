package explain

import "github.com/gpuscale/gpuscale/pkg/status"

// repairText says what node repair found: each unhealthy node, why, and
// what is done about it.
func (e *Explainer) repairText(r *Report, rp *status.Repair) {
	if rp == nil {
		return
	}
	if len(rp.Nodes) == 0 {
		r.add("node repair: on, no unhealthy node")
		return
	}
	for _, n := range rp.Nodes {
		line := "node repair: node " + n.Name + " (group " + n.Group + ") is unhealthy: " + n.Message
		switch n.State {
		case status.RepairRepairing:
			line += "; its removal started in the last loop"
		case status.RepairRemoving:
			line += "; being removed"
		default:
			line += "; held (" + n.Held + "): " + n.HeldMessage
		}
		r.add("%s", line)
	}
}
