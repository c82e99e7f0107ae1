package autoscaler

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/forecast"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/repair"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

// Options carry every decision option with the upstream defaults
// (DefaultOptions). Limits and ExpendablePodsPriorityCutoff are set here once
// and passed to both halves.
type Options struct {
	ScaleUp      scaleup.Options
	ScaleDown    scaledown.Options
	ClusterState clusterstate.Options
	// ScaleDownEnabled (--scale-down-enabled, true).
	ScaleDownEnabled bool
	// Limits are --max-nodes-total, --cores-total, --memory-total, --gpu-total.
	Limits limits.Limits
	// ExpendablePodsPriorityCutoff (--expendable-pods-priority-cutoff, -10).
	ExpendablePodsPriorityCutoff int32
	// OkTotalUnreadyCount and MaxTotalUnreadyPercentage are the health
	// brake: when more than OkTotalUnreadyCount nodes and more than
	// MaxTotalUnreadyPercentage percent of all nodes are unready, the loop
	// neither scales up nor down (--ok-total-unready-count 3,
	// --max-total-unready-percentage 45).
	OkTotalUnreadyCount       int
	MaxTotalUnreadyPercentage float64
	// Consolidation moves pods so that nodes can go whatever their
	// utilization (off by default; on in the gpu-cost profile).
	Consolidation consolidation.Options
	// ProvisioningRequests serves autoscaling.x-k8s.io ProvisioningRequests
	// (--enable-provisioning-requests and the related flags).
	ProvisioningRequests provisioningrequest.Options
	// Disruption limits every voluntary disruption, scale-down's and
	// consolidation's alike (--disruption-budget, --disruption-window);
	// none by default, as upstream.
	Disruption disruption.Policy
	// Pending is how the shells pick Input.Pending from the pods waiting
	// for a node (--bypassed-scheduler-names); Step reports it.
	Pending pending.Options
	// Repair removes nodes whose accelerators failed, within the
	// disruption limits (--node-repair and the --repair-* flags; off by
	// default).
	Repair repair.Options
	// Interruption is how nodes being taken away are known and weighed
	// (interruption.go).
	Interruption InterruptionOptions
	// CapacityBuffers serves autoscaling.x-k8s.io CapacityBuffers
	// (--capacity-buffer-controller-enabled,
	// --capacity-buffer-pod-injection-enabled; both off by default, as
	// upstream). Step reads PodInjectionEnabled.
	CapacityBuffers capacitybuffer.Options
	// Forecast holds warm capacity for inference workloads ahead of their
	// HPA (--forecast-buffers and the --forecast-* flags; off by default,
	// on in the inference profile; forecast.go).
	Forecast forecast.Options
}

// DefaultOptions are the upstream Cluster Autoscaler defaults.
func DefaultOptions() Options {
	return Options{
		ScaleUp:                      scaleup.DefaultOptions(),
		ScaleDown:                    scaledown.DefaultOptions(),
		ClusterState:                 clusterstate.DefaultOptions(),
		ScaleDownEnabled:             true,
		Interruption:                 DefaultInterruption(),
		Limits:                       limits.Default(),
		ExpendablePodsPriorityCutoff: -10,
		OkTotalUnreadyCount:          3,
		MaxTotalUnreadyPercentage:    45,
		Consolidation:                consolidation.DefaultOptions(),
		ProvisioningRequests:         provisioningrequest.DefaultOptions(),
		Repair:                       repair.DefaultOptions(),
		Forecast:                     forecast.DefaultOptions(),
	}
}

// Validate names the first option that cannot work.
func (o Options) Validate() error {
	switch {
	case o.OkTotalUnreadyCount < 0:
		return fmt.Errorf("--ok-total-unready-count: must not be negative, got %d", o.OkTotalUnreadyCount)
	case !(o.MaxTotalUnreadyPercentage >= 0 && o.MaxTotalUnreadyPercentage <= 100):
		return fmt.Errorf("--max-total-unready-percentage: must be from 0 to 100, got %g", o.MaxTotalUnreadyPercentage)
	}
	if err := o.Pending.Validate(); err != nil {
		return err
	}
	if err := o.Forecast.Validate(); err != nil {
		return err
	}
	return o.ProvisioningRequests.Validate()
}

// DrainOptions are the drain-rule options both planners judge pods with,
// as New resolves them; the live shell judges a node's pods again with
// them after tainting it.
func (o Options) DrainOptions() drain.Options {
	sd := o.ScaleDown
	sd.ExpendablePodsPriorityCutoff = o.ExpendablePodsPriorityCutoff
	return sd.DrainOptions()
}
