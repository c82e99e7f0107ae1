package snapshot

import (
	"fmt"
	"time"
)

// GroupOptions override cluster-wide decision options for the nodes of one
// group, as the upstream Cluster Autoscaler's per-group autoscaling
// options do (AWS tags k8s.io/cluster-autoscaler/node-template/autoscaling-options/*).
// A nil field keeps the cluster's value.
type GroupOptions struct {
	// ScaleDownUtilizationThreshold overrides
	// --scale-down-utilization-threshold for the group's nodes without GPUs.
	ScaleDownUtilizationThreshold *float64 `json:"scaleDownUtilizationThreshold,omitempty"`
	// ScaleDownGPUUtilizationThreshold overrides
	// --scale-down-gpu-utilization-threshold for its GPU nodes.
	ScaleDownGPUUtilizationThreshold *float64 `json:"scaleDownGPUUtilizationThreshold,omitempty"`
	// ScaleDownUnneededTime overrides --scale-down-unneeded-time.
	ScaleDownUnneededTime *time.Duration `json:"scaleDownUnneededTime,omitempty"`
	// ScaleDownUnreadyTime overrides --scale-down-unready-time.
	ScaleDownUnreadyTime *time.Duration `json:"scaleDownUnreadyTime,omitempty"`
	// MaxNodeProvisionTime overrides --max-node-provision-time for the
	// group's scale-ups.
	MaxNodeProvisionTime *time.Duration `json:"maxNodeProvisionTime,omitempty"`
	// IgnoreDaemonSetsUtilization overrides --ignore-daemonsets-utilization.
	IgnoreDaemonSetsUtilization *bool `json:"ignoreDaemonSetsUtilization,omitempty"`
	// ReservedNodes is how many of the group's nodes a capacity
	// reservation or capacity block already pays for: the price expander
	// counts nodes up to it as free, so the group is grown before on-demand
	// or spot capacity until its target reaches the reservation.
	ReservedNodes *int `json:"reservedNodes,omitempty"`
	// CapacityBlockEnd is when the capacity block backing the group ends
	// and the cloud takes its nodes back: they are drained ahead of it and
	// the group is not grown once the end is near.
	CapacityBlockEnd *time.Time `json:"capacityBlockEnd,omitempty"`
	// QueuedProvisioning marks a group that takes queued capacity (GKE's
	// flex-start node pools): it grows only for ProvisioningRequests of
	// the queued class, through the cloud's queue, never for other pods.
	QueuedProvisioning *bool `json:"queuedProvisioning,omitempty"`
}

// Queued reports whether g takes queued capacity only.
func Queued(g *NodeGroup) bool { return g != nil && g.Options.TakesQueued() }

// TakesQueued reports whether options mark a group that takes queued
// capacity only.
func (o *GroupOptions) TakesQueued() bool {
	return o != nil && o.QueuedProvisioning != nil && *o.QueuedProvisioning
}

// ReservedRoom is how many more nodes of g are paid for by its reservation:
// its reserved nodes less its target size, never below zero.
func ReservedRoom(g *NodeGroup) int {
	if g == nil || g.Options == nil || g.Options.ReservedNodes == nil {
		return 0
	}
	return max(0, *g.Options.ReservedNodes-g.TargetSize)
}

// IsZero reports whether no option is overridden.
func (o *GroupOptions) IsZero() bool {
	return o == nil || *o == GroupOptions{}
}

// Validate names the first option out of range.
func (o *GroupOptions) Validate() error {
	if o == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"scaleDownUtilizationThreshold", o.ScaleDownUtilizationThreshold},
		{"scaleDownGPUUtilizationThreshold", o.ScaleDownGPUUtilizationThreshold},
	} {
		if f.v != nil && !(*f.v >= 0 && *f.v <= 1) {
			return fmt.Errorf("%s: must be between 0 and 1, got %g", f.name, *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
	}{
		{"scaleDownUnneededTime", o.ScaleDownUnneededTime},
		{"scaleDownUnreadyTime", o.ScaleDownUnreadyTime},
		{"maxNodeProvisionTime", o.MaxNodeProvisionTime},
	} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("%s: must not be negative, got %s", f.name, *f.v)
		}
	}
	if o.ReservedNodes != nil && *o.ReservedNodes < 0 {
		return fmt.Errorf("reservedNodes: must not be negative, got %d", *o.ReservedNodes)
	}
	return nil
}
