package repair

import (
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Condition is a node condition that marks a node for repair when it has
// had Status for After (from the condition's lastTransitionTime).
type Condition struct {
	Type   v1.NodeConditionType
	Status v1.ConditionStatus
	After  time.Duration
}

// String writes the condition as ParseCondition reads it.
func (c Condition) String() string {
	return fmt.Sprintf("%s=%s:%s", c.Type, c.Status, c.After)
}

// ParseCondition reads Type=Status:duration, for example
// "AcceleratedHardwareReady=False:10m". Status is True, False or Unknown.
func ParseCondition(s string) (Condition, error) {
	typ, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Condition{}, fmt.Errorf("repair condition %q: want Type=Status:duration, such as AcceleratedHardwareReady=False:10m", s)
	}
	status, dur, ok := strings.Cut(rest, ":")
	if !ok {
		return Condition{}, fmt.Errorf("repair condition %q: duration: missing (want Type=Status:duration)", s)
	}
	typ, status, dur = strings.TrimSpace(typ), strings.TrimSpace(status), strings.TrimSpace(dur)
	c := Condition{Type: v1.NodeConditionType(typ), Status: v1.ConditionStatus(status)}
	switch {
	case typ == "":
		return c, fmt.Errorf("repair condition %q: type: empty", s)
	case c.Status != v1.ConditionTrue && c.Status != v1.ConditionFalse && c.Status != v1.ConditionUnknown:
		return c, fmt.Errorf("repair condition %q: status: want True, False or Unknown, got %q", s, status)
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return c, fmt.Errorf("repair condition %q: duration: %q is not a duration such as 10m", s, dur)
	}
	if d < 0 {
		return c, fmt.Errorf("repair condition %q: duration: must not be negative, got %q", s, dur)
	}
	c.After = d
	return c, nil
}

// DefaultConditions are the accelerator health conditions published by
// the agents that set them:
//   - AcceleratedHardwareReady=False, set by the EKS node monitoring agent
//     when a GPU or Neuron device fails; EKS and Karpenter replace such a
//     node after 10 minutes.
//   - GpuXidError=True and GpuThermalMarginWatch=True, set by NVIDIA's
//     NVSentinel GPU health monitors for fatal Xid errors and for a GPU
//     past its hardware slowdown temperature; NVSentinel quarantines such
//     nodes at once, gpuscale waits the same 10 minutes as for EKS's.
func DefaultConditions() []Condition {
	return []Condition{
		{Type: "AcceleratedHardwareReady", Status: v1.ConditionFalse, After: 10 * time.Minute},
		{Type: "GpuXidError", Status: v1.ConditionTrue, After: 10 * time.Minute},
		{Type: "GpuThermalMarginWatch", Status: v1.ConditionTrue, After: 10 * time.Minute},
	}
}

// Options tune node repair. Each field names its flag and default.
type Options struct {
	// Enabled (--node-repair, false): whether unhealthy nodes are removed.
	// Off by default: the upstream Cluster Autoscaler never removes a node
	// that runs pods because of its health, and Karpenter ships its node
	// repair behind a feature gate that is off; an operator turns it on
	// knowingly, usually where no other agent (NVSentinel's remediation,
	// a managed node group's own auto repair) already does.
	Enabled bool
	// Conditions (--repair-condition, repeatable; DefaultConditions): node
	// conditions that mark a node for repair, and for how long each is
	// tolerated.
	Conditions []Condition
	// MissingGPUsAfter (--repair-missing-gpus-after, 10m): how long a node
	// may advertise fewer allocatable accelerators than its capacity (the
	// device plugin withdrew failed devices), or than its group's template
	// past --max-node-startup-time, before it is repaired; 0 turns the
	// signal off.
	MissingGPUsAfter time.Duration
	// MaxPercentage (--repair-max-percentage, 10): the most of a group's
	// nodes under repair at once, as a percentage of its registered nodes,
	// rounded up (so at least one).
	MaxPercentage float64
	// OkUnhealthyCount and MaxUnhealthyPercentage are the group's health
	// brake (--repair-ok-unhealthy-count 1,
	// --repair-max-unhealthy-percentage 20): when more than
	// OkUnhealthyCount of a group's nodes and more than
	// MaxUnhealthyPercentage percent of them are unhealthy, the group
	// looks broken as a whole and none of its nodes is repaired.
	OkUnhealthyCount       int
	MaxUnhealthyPercentage float64
	// Disruption and Drain are set by the loop from the options every
	// voluntary disruption shares: --disruption-budget and
	// --disruption-window, and the drain rules' options.
	Disruption disruption.Policy
	Drain      drain.Options
	// MaxCloudProviderNodeDeletionTime (shared with scale-down, 5m): a
	// node tainted ToBeDeletedByClusterAutoscaler more recently than this
	// is being removed already, by this or an earlier instance.
	MaxCloudProviderNodeDeletionTime time.Duration
}

// DefaultOptions are the documented defaults: repair off.
func DefaultOptions() Options {
	return Options{
		Conditions:             DefaultConditions(),
		MissingGPUsAfter:       10 * time.Minute,
		MaxPercentage:          10,
		OkUnhealthyCount:       1,
		MaxUnhealthyPercentage: 20,
	}
}

// Validate reports every option that cannot work, naming its flag.
func (o Options) Validate() error {
	var errs []error
	if o.MissingGPUsAfter < 0 {
		errs = append(errs, fmt.Errorf("--repair-missing-gpus-after: must not be negative, got %s", o.MissingGPUsAfter))
	}
	if !(o.MaxPercentage > 0 && o.MaxPercentage <= 100) {
		errs = append(errs, fmt.Errorf("--repair-max-percentage: must be above 0 and at most 100, got %g", o.MaxPercentage))
	}
	if o.OkUnhealthyCount < 0 {
		errs = append(errs, fmt.Errorf("--repair-ok-unhealthy-count: must not be negative, got %d", o.OkUnhealthyCount))
	}
	if !(o.MaxUnhealthyPercentage >= 0 && o.MaxUnhealthyPercentage <= 100) {
		errs = append(errs, fmt.Errorf("--repair-max-unhealthy-percentage: must be from 0 to 100, got %g", o.MaxUnhealthyPercentage))
	}
	seen := map[v1.NodeConditionType]v1.ConditionStatus{}
	for i, c := range o.Conditions {
		if st, ok := seen[c.Type]; ok && st == c.Status {
			errs = append(errs, fmt.Errorf("--repair-condition[%d] %q: %s=%s is given twice", i, c.String(), c.Type, c.Status))
		}
		seen[c.Type] = c.Status
	}
	return errors.Join(errs...)
}
