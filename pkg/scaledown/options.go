package scaledown

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Options tune scale-down. Every field has the Cluster Autoscaler flag of the
// same meaning in its comment, with the upstream default that
// DefaultOptions sets.
type Options struct {
	// UtilizationThreshold (--scale-down-utilization-threshold, 0.5): a node
	// without GPUs is a candidate when the larger of its cpu and memory
	// requests over allocatable is below it.
	UtilizationThreshold float64
	// GPUUtilizationThreshold (--scale-down-gpu-utilization-threshold, 0.5):
	// a GPU node is a candidate when its GPU requests over allocatable GPUs
	// are below it; its cpu and memory do not count.
	GPUUtilizationThreshold float64
	// UnneededTime (--scale-down-unneeded-time, 10m): how long a ready node
	// must stay unneeded before it is removed.
	UnneededTime time.Duration
	// UnreadyTime (--scale-down-unready-time, 20m): the same for unready
	// nodes, and for GPU nodes whose GPUs are not advertised yet.
	UnreadyTime time.Duration
	// UnreadyEnabled (--scale-down-unready-enabled, true): whether unready
	// nodes may be removed at all.
	UnreadyEnabled bool
	// DelayAfterAdd (--scale-down-delay-after-add, 10m): no removal for this
	// long after a scale-up.
	DelayAfterAdd time.Duration
	// DelayAfterDelete (--scale-down-delay-after-delete, 0): no removal for
	// this long after a node was removed. Upstream documents the scan
	// interval as its default; the shell may pass that.
	DelayAfterDelete time.Duration
	// DelayAfterFailure (--scale-down-delay-after-failure, 3m): no removal
	// for this long after a failed removal.
	DelayAfterFailure time.Duration
	// MaxScaleDownParallelism (--max-scale-down-parallelism, 10): the most
	// nodes being removed at once, deletions already in progress included;
	// 0 means no limit.
	MaxScaleDownParallelism int
	// MaxDrainParallelism (--max-drain-parallelism, 1): the most non-empty
	// nodes being drained at once, in progress included; 0 means no limit.
	MaxDrainParallelism int
	// NonEmptyCandidatesCount (--scale-down-non-empty-candidates-count, 30):
	// once this many non-empty nodes are found unneeded in a loop, the rest
	// are not simulated; 0 or less means no limit. Nodes already unneeded
	// are simulated first, so their clocks keep running.
	NonEmptyCandidatesCount int
	// SkipNodesWithLocalStorage (--skip-nodes-with-local-storage, true).
	SkipNodesWithLocalStorage bool
	// SkipNodesWithSystemPods (--skip-nodes-with-system-pods, true).
	SkipNodesWithSystemPods bool
	// SkipNodesWithCustomControllerPods
	// (--skip-nodes-with-custom-controller-pods, true).
	SkipNodesWithCustomControllerPods bool
	// BlockingSystemPodDisruptionTimeout
	// (--blocking-system-pod-distruption-timeout, 1h): a kube-system pod
	// without a PodDisruptionBudget blocks its node only this long after
	// its creation.
	BlockingSystemPodDisruptionTimeout time.Duration
	// MinReplicaCount (--min-replica-count, 0): a pod whose ReplicaSet or
	// ReplicationController asks for fewer replicas blocks its node.
	MinReplicaCount int
	// ExpendablePodsPriorityCutoff (--expendable-pods-priority-cutoff, -10):
	// pods with a lower priority neither block a node, count towards its
	// utilization, nor take room on other nodes.
	ExpendablePodsPriorityCutoff int32
	// IgnoreDaemonSetsUtilization (--ignore-daemonsets-utilization, false):
	// leave DaemonSet pods out of utilization (from both requests and
	// allocatable).
	IgnoreDaemonSetsUtilization bool
	// IgnoreMirrorPodsUtilization (--ignore-mirror-pods-utilization, false):
	// the same for mirror (static) pods.
	IgnoreMirrorPodsUtilization bool
	// DaemonSetEvictionForEmptyNodes (--daemonset-eviction-for-empty-nodes,
	// false): list DaemonSet pods of empty nodes for graceful eviction.
	DaemonSetEvictionForEmptyNodes bool
	// DaemonSetEvictionForOccupiedNodes
	// (--daemonset-eviction-for-occupied-nodes, true): the same for nodes
	// that are drained.
	DaemonSetEvictionForOccupiedNodes bool
	// MaxGracefulTerminationSec (--max-graceful-termination-sec, 600): the
	// longest grace period the actuator gives an evicted pod.
	MaxGracefulTerminationSec int
	// MaxCloudProviderNodeDeletionTime
	// (--max-cloud-provider-node-deletion-time, 5m): a node tainted
	// ToBeDeletedByClusterAutoscaler longer ago than this is taken to be a
	// deletion that died, and is judged again.
	MaxCloudProviderNodeDeletionTime time.Duration
	// MaxBulkSoftTaintCount (--max-bulk-soft-taint-count, 10): the most
	// nodes to soft-taint or untaint per loop; 0 means no limit.
	MaxBulkSoftTaintCount int
	// Limits are the cluster-wide bounds; scale-down respects the minimums
	// (--cores-total, --memory-total, --gpu-total).
	Limits limits.Limits
	// Disruption (--disruption-budget, --disruption-window; none) limits
	// scale-down's removals beside the parallelism flags, counted with
	// every other voluntary disruption in flight. The zero Policy limits
	// nothing, as upstream.
	Disruption disruption.Policy
}

// DefaultOptions returns the Cluster Autoscaler defaults.
func DefaultOptions() Options {
	d := drain.DefaultOptions()
	return Options{
		UtilizationThreshold:               0.5,
		GPUUtilizationThreshold:            0.5,
		UnneededTime:                       10 * time.Minute,
		UnreadyTime:                        20 * time.Minute,
		UnreadyEnabled:                     true,
		DelayAfterAdd:                      10 * time.Minute,
		DelayAfterDelete:                   0,
		DelayAfterFailure:                  3 * time.Minute,
		MaxScaleDownParallelism:            10,
		MaxDrainParallelism:                1,
		NonEmptyCandidatesCount:            30,
		SkipNodesWithLocalStorage:          d.SkipNodesWithLocalStorage,
		SkipNodesWithSystemPods:            d.SkipNodesWithSystemPods,
		SkipNodesWithCustomControllerPods:  d.SkipNodesWithCustomControllerPods,
		ExpendablePodsPriorityCutoff:       d.ExpendablePodsPriorityCutoff,
		BlockingSystemPodDisruptionTimeout: d.BlockingSystemPodDisruptionTimeout,
		DaemonSetEvictionForOccupiedNodes:  true,
		MaxGracefulTerminationSec:          600,
		MaxCloudProviderNodeDeletionTime:   5 * time.Minute,
		MaxBulkSoftTaintCount:              10,
		Limits:                             limits.Default(),
	}
}

// DrainOptions are the options the drain rules read (shared with
// consolidation).
func (o *Options) DrainOptions() drain.Options {
	return drain.Options{
		SkipNodesWithLocalStorage:          o.SkipNodesWithLocalStorage,
		SkipNodesWithSystemPods:            o.SkipNodesWithSystemPods,
		SkipNodesWithCustomControllerPods:  o.SkipNodesWithCustomControllerPods,
		ExpendablePodsPriorityCutoff:       o.ExpendablePodsPriorityCutoff,
		BlockingSystemPodDisruptionTimeout: o.BlockingSystemPodDisruptionTimeout,
		MinReplicaCount:                    o.MinReplicaCount,
	}
}

// Validate reports every field that is out of range, naming the field, its
// flag and the value.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field, flag, rule string, v any) {
		errs = append(errs, fmt.Errorf("scale-down option %s (--%s): %s, got %v", field, flag, rule, v))
	}
	for _, f := range []struct {
		field, flag string
		v           float64
	}{
		{"UtilizationThreshold", "scale-down-utilization-threshold", o.UtilizationThreshold},
		{"GPUUtilizationThreshold", "scale-down-gpu-utilization-threshold", o.GPUUtilizationThreshold},
	} {
		if !(f.v >= 0 && f.v <= 1) { // also catches NaN
			bad(f.field, f.flag, "must be between 0 and 1", f.v)
		}
	}
	for _, f := range []struct {
		field, flag string
		v           time.Duration
	}{
		{"UnneededTime", "scale-down-unneeded-time", o.UnneededTime},
		{"UnreadyTime", "scale-down-unready-time", o.UnreadyTime},
		{"DelayAfterAdd", "scale-down-delay-after-add", o.DelayAfterAdd},
		{"DelayAfterDelete", "scale-down-delay-after-delete", o.DelayAfterDelete},
		{"DelayAfterFailure", "scale-down-delay-after-failure", o.DelayAfterFailure},
		{"MaxCloudProviderNodeDeletionTime", "max-cloud-provider-node-deletion-time", o.MaxCloudProviderNodeDeletionTime},
		{"BlockingSystemPodDisruptionTimeout", "blocking-system-pod-distruption-timeout", o.BlockingSystemPodDisruptionTimeout},
	} {
		if f.v < 0 {
			bad(f.field, f.flag, "must not be negative", f.v)
		}
	}
	for _, f := range []struct {
		field, flag string
		v           int
	}{
		{"MaxScaleDownParallelism", "max-scale-down-parallelism", o.MaxScaleDownParallelism},
		{"MaxDrainParallelism", "max-drain-parallelism", o.MaxDrainParallelism},
		{"MaxGracefulTerminationSec", "max-graceful-termination-sec", o.MaxGracefulTerminationSec},
		{"MaxBulkSoftTaintCount", "max-bulk-soft-taint-count", o.MaxBulkSoftTaintCount},
		{"MinReplicaCount", "min-replica-count", o.MinReplicaCount},
	} {
		if f.v < 0 {
			bad(f.field, f.flag, "must not be negative", f.v)
		}
	}
	errs = append(errs, validateLimits(o.Limits)...)
	if err := o.Disruption.Validate("disruption-budget", "disruption-window"); err != nil {
		errs = append(errs, fmt.Errorf("scale-down options: %w", err))
	}
	return errors.Join(errs...)
}

func validateLimits(l limits.Limits) []error {
	var errs []error
	check := func(field, flag string, r limits.Range) {
		if r.Min < 0 || r.Max < r.Min {
			errs = append(errs, fmt.Errorf("scale-down option Limits.%s (--%s): want 0 <= min <= max, got %d:%d", field, flag, r.Min, r.Max))
		}
	}
	check("Cores", "cores-total", l.Cores)
	check("MemoryGiB", "memory-total", l.MemoryGiB)
	for _, typ := range l.GPUTypes() {
		check("GPUs["+typ+"]", "gpu-total", l.GPUs[typ])
	}
	return errs
}
