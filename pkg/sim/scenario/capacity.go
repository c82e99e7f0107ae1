package scenario

import (
	"time"

	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

// validateCapacity reports a capacity block or a queue the group cannot
// have.
func (g *NodeGroup) validateCapacity(bad func(field, format string, args ...any)) {
	if e := g.CapacityBlockEnd; e != nil && e.Duration <= 0 {
		bad("capacityBlockEnd", "must be positive (a time after the start), got %s", e.Duration)
	}
	switch d := g.QueuedDelay.Duration; {
	case d < 0:
		bad("queuedDelay", "must not be negative, got %s", d)
	case d > 0 && !g.QueuedProvisioning:
		bad("queuedDelay", "applies to queuedProvisioning groups only, got %s on a group without it", d)
	}
}

// validateProvisioningClass reports a request class the workload's jobs
// cannot ask for.
func (w *Workload) validateProvisioningClass(bad func(field, format string, args ...any)) {
	switch w.ProvisioningClass {
	case "", pr.ClassBestEffortAtomicScaleUp, pr.ClassQueuedProvisioning:
	default:
		bad("provisioningClass", "want %s or %s, got %q", pr.ClassBestEffortAtomicScaleUp, pr.ClassQueuedProvisioning, w.ProvisioningClass)
	}
	if w.ProvisioningClass != "" && !w.hasGangs() {
		bad("provisioningClass", "applies to jobs of several pods (gang > 1) only; the workload has none")
	}
	switch d := w.MaxRunDuration.Duration; {
	case d == 0:
	case w.ProvisioningClass != pr.ClassQueuedProvisioning:
		bad("maxRunDuration", "applies to provisioningClass %s only, got %s", pr.ClassQueuedProvisioning, d)
	case d < time.Second || d > pr.MaxRunDuration:
		bad("maxRunDuration", "must be from 1s to %s, got %s", pr.MaxRunDuration, d)
	}
}

// hasGangs reports whether the workload submits jobs of several pods.
func (w *Workload) hasGangs() bool {
	for _, b := range w.Jobs {
		if b.Gang > 1 {
			return true
		}
	}
	return false
}
