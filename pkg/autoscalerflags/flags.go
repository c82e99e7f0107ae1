// Package autoscalerflags is the one definition of every flag that changes
// the node autoscaler's decisions, under the upstream Cluster Autoscaler's
// names and defaults. `gpuscale cluster-autoscaler` adds them to its
// command line, and `gpuscale simulate` takes them in --set, --compare
// and scenario files: every shell parses and validates the same flags
// with the same messages, straight into autoscaler.Options.
package autoscalerflags

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/expander"
)

// Decision is what a shell's decisions depend on: the core's options and
// the loop period.
type Decision struct {
	Autoscaler autoscaler.Options
	// ScanInterval is how often the loop runs (--scan-interval, 10s).
	ScanInterval time.Duration
}

// Defaults are the upstream defaults.
func Defaults() Decision {
	return Decision{Autoscaler: autoscaler.DefaultOptions(), ScanInterval: 10 * time.Second}
}

// Flags are the decision flags bound to a Decision.
type Flags struct {
	// Decision receives the values as flags are set.
	Decision Decision
	fs       *pflag.FlagSet
	// checks are the values parsed with deferred errors, so that every
	// bad value is reported at once by Validate.
	checks []checked
	// profile is --profile; Validate applies it once to the flags not set.
	profile        string
	profileApplied bool
}

// New returns the flags with the upstream defaults.
func New() *Flags {
	f := &Flags{Decision: Defaults(), fs: pflag.NewFlagSet("decision", pflag.ContinueOnError)}
	f.fs.SortFlags = false
	f.define()
	return f
}

// FlagSet holds only the decision flags; add it to a command's flags with
// AddFlagSet, which shares the flags, so parsing either sets Decision.
func (f *Flags) FlagSet() *pflag.FlagSet { return f.fs }

// Names lists every decision flag, in definition order.
func (f *Flags) Names() []string {
	var out []string
	f.fs.VisitAll(func(fl *pflag.Flag) { out = append(out, fl.Name) })
	return out
}

func (f *Flags) define() {
	fs, d := f.fs, &f.Decision
	o := &d.Autoscaler
	up, down, cs := &o.ScaleUp, &o.ScaleDown, &o.ClusterState

	fs.DurationVar(&d.ScanInterval, "scan-interval", d.ScanInterval, "How often the cluster is re-evaluated for scale-up or scale-down.")
	fs.StringVar(&up.Expander, "expander", up.Expander, "Node group expanders, comma-separated, applied in order: "+strings.Join(expander.Names(), ", ")+".")
	fs.Int64Var(&up.Seed, "seed", up.Seed, "Seed of the expanders' random tie-break; the same seed chooses the same.")
	fs.IntVar(&o.Limits.MaxNodesTotal, "max-nodes-total", o.Limits.MaxNodesTotal, "Maximum number of nodes in all node groups; 0 means no limit.")
	f.rangeVar(&o.Limits.Cores, "cores-total", "Minimum and maximum number of cores in the cluster, as <min>:<max>.")
	f.rangeVar(&o.Limits.MemoryGiB, "memory-total", "Minimum and maximum GiB of memory in the cluster, as <min>:<max>.")
	f.gpuTotalVar(&o.Limits.GPUs, "gpu-total", "Minimum and maximum number of GPUs of a type in the cluster, as <type>:<min>:<max>. Can be used multiple times.")
	fs.IntVar(&up.MaxNodesPerScaleUp, "max-nodes-per-scaleup", up.MaxNodesPerScaleUp, "Maximum number of nodes added in one scale-up.")
	fs.DurationVar(&cs.MaxNodeProvisionTime, "max-node-provision-time", cs.MaxNodeProvisionTime, "How long a scale-up may take to register its nodes before the group is backed off and the nodes that never came are given back.")
	fs.DurationVar(&cs.MaxNodeStartupTime, "max-node-startup-time", cs.MaxNodeStartupTime, "How long a registered node (an accelerator node: until it advertises its devices) may take to become ready; until then it counts as upcoming.")
	fs.DurationVar(&cs.UnregisteredNodeRemovalTime, "unregistered-node-removal-time", cs.UnregisteredNodeRemovalTime, "How long an instance the cloud created may go without registering as a node before it is deleted.")
	fs.BoolVar(&cs.ForceDeleteUnregisteredNodes, "force-delete-unregistered-nodes", cs.ForceDeleteUnregisteredNodes, "Delete instances that never registered even when that takes their group below its minimum size.")
	fs.DurationVar(&cs.Backoff.Initial, "initial-node-group-backoff-duration", cs.Backoff.Initial, "Backoff of a node group after its first failed scale-up.")
	fs.DurationVar(&cs.Backoff.Max, "max-node-group-backoff-duration", cs.Backoff.Max, "Longest backoff of a node group; each failure after a backoff ended doubles it up to this.")
	fs.DurationVar(&cs.Backoff.Reset, "node-group-backoff-reset-timeout", cs.Backoff.Reset, "Time without failure after which a node group's backoff starts over.")
	f.appendVar(&cs.Readiness.StartupTaints, "startup-taint", "A taint key that marks a node still starting (taken off once an agent on it is ready): the node counts as upcoming and new nodes are simulated without it. Can be used multiple times.")
	f.appendVar(&cs.Readiness.StartupTaints, "ignore-taint", "Older name of --startup-taint. Can be used multiple times.")
	f.appendVar(&cs.Readiness.StartupTaintPrefixes, "startup-taint-prefix", "A taint key prefix that marks start-up taints, besides the built-in startup-taint.cluster-autoscaler.kubernetes.io/ and ignore-taint.cluster-autoscaler.kubernetes.io/. Can be used multiple times.")
	f.appendVar(&cs.Readiness.StatusTaints, "status-taint", "A taint key that only reports a state: ignored when simulating nodes, without making them unready. Can be used multiple times.")
	fs.BoolVar(&up.BalanceSimilarNodeGroups, "balance-similar-node-groups", up.BalanceSimilarNodeGroups, "Spread scale-ups across similar node groups (e.g. one per zone).")
	f.appendVar(&up.BalancingIgnoreLabels, "balancing-ignore-label", "A label that may differ between similar node groups. Can be used multiple times.")
	f.int32Var(&o.ExpendablePodsPriorityCutoff, "expendable-pods-priority-cutoff", "Pods with priority below this never trigger scale-up nor block scale-down.")
	fs.DurationVar(&up.NewPodScaleUpDelay, "new-pod-scale-up-delay", up.NewPodScaleUpDelay, "Pods younger than this are not considered for scale-up.")
	fs.StringSliceVar(&o.Pending.BypassedSchedulers, "bypassed-scheduler-names", o.Pending.BypassedSchedulers, "Schedulers, comma-separated, whose pods count as pending as soon as they wait for a node, without waiting for the Unschedulable mark. Pods of schedulers neither listed nor default-scheduler are left alone (the status counts them).")
	fs.IntVar(&o.OkTotalUnreadyCount, "ok-total-unready-count", o.OkTotalUnreadyCount, "Number of unready nodes allowed whatever --max-total-unready-percentage says.")
	fs.Float64Var(&o.MaxTotalUnreadyPercentage, "max-total-unready-percentage", o.MaxTotalUnreadyPercentage, "Percentage of unready nodes above which (and above --ok-total-unready-count) the autoscaler stops scaling until they recover.")

	fs.BoolVar(&o.ScaleDownEnabled, "scale-down-enabled", o.ScaleDownEnabled, "Whether to scale down the cluster.")
	fs.Float64Var(&down.UtilizationThreshold, "scale-down-utilization-threshold", down.UtilizationThreshold, "A node without GPUs is a scale-down candidate when the larger of its cpu and memory requests over allocatable is below this.")
	fs.Float64Var(&down.GPUUtilizationThreshold, "scale-down-gpu-utilization-threshold", down.GPUUtilizationThreshold, "A GPU node is a scale-down candidate when its GPU requests over allocatable GPUs are below this.")
	fs.DurationVar(&down.UnneededTime, "scale-down-unneeded-time", down.UnneededTime, "How long a node must be unneeded before it is removed.")
	fs.DurationVar(&down.UnreadyTime, "scale-down-unready-time", down.UnreadyTime, "How long an unready node must be unneeded before it is removed.")
	fs.BoolVar(&down.UnreadyEnabled, "scale-down-unready-enabled", down.UnreadyEnabled, "Whether unready nodes may be removed.")
	fs.DurationVar(&down.DelayAfterAdd, "scale-down-delay-after-add", down.DelayAfterAdd, "How long after a scale-up scale-down evaluation resumes.")
	fs.DurationVar(&down.DelayAfterDelete, "scale-down-delay-after-delete", down.DelayAfterDelete, "How long after a node removal scale-down evaluation resumes.")
	fs.DurationVar(&down.DelayAfterFailure, "scale-down-delay-after-failure", down.DelayAfterFailure, "How long after a failed removal scale-down evaluation resumes.")
	fs.IntVar(&down.MaxScaleDownParallelism, "max-scale-down-parallelism", down.MaxScaleDownParallelism, "Most nodes (empty or drained) removed at once; 0 means no limit.")
	fs.IntVar(&down.MaxDrainParallelism, "max-drain-parallelism", down.MaxDrainParallelism, "Most non-empty nodes drained at once; 0 means no limit.")
	fs.IntVar(&down.NonEmptyCandidatesCount, "scale-down-non-empty-candidates-count", down.NonEmptyCandidatesCount, "Most non-empty nodes simulated for removal per loop; 0 or less means no limit.")
	fs.BoolVar(&down.SkipNodesWithLocalStorage, "skip-nodes-with-local-storage", down.SkipNodesWithLocalStorage, "Never remove nodes with pods using local storage (emptyDir, hostPath).")
	fs.BoolVar(&down.SkipNodesWithSystemPods, "skip-nodes-with-system-pods", down.SkipNodesWithSystemPods, "Never remove nodes with kube-system pods no PodDisruptionBudget covers (DaemonSet and mirror pods aside).")
	fs.BoolVar(&down.SkipNodesWithCustomControllerPods, "skip-nodes-with-custom-controller-pods", down.SkipNodesWithCustomControllerPods, "Never remove nodes with pods owned by controllers other than ReplicaSet, ReplicationController, Job and StatefulSet.")
	fs.IntVar(&down.MaxGracefulTerminationSec, "max-graceful-termination-sec", down.MaxGracefulTerminationSec, "Longest grace period, in seconds, given to a pod evicted for scale-down.")
	fs.BoolVar(&down.IgnoreDaemonSetsUtilization, "ignore-daemonsets-utilization", down.IgnoreDaemonSetsUtilization, "Leave DaemonSet pods out of node utilization.")
	fs.BoolVar(&down.IgnoreMirrorPodsUtilization, "ignore-mirror-pods-utilization", down.IgnoreMirrorPodsUtilization, "Leave mirror (static) pods out of node utilization.")
	fs.BoolVar(&down.DaemonSetEvictionForEmptyNodes, "daemonset-eviction-for-empty-nodes", down.DaemonSetEvictionForEmptyNodes, "Evict DaemonSet pods gracefully from empty nodes before removal.")
	fs.BoolVar(&down.DaemonSetEvictionForOccupiedNodes, "daemonset-eviction-for-occupied-nodes", down.DaemonSetEvictionForOccupiedNodes, "Evict DaemonSet pods gracefully from drained nodes before removal.")
	fs.DurationVar(&down.MaxCloudProviderNodeDeletionTime, "max-cloud-provider-node-deletion-time", down.MaxCloudProviderNodeDeletionTime, "A node tainted for deletion longer ago than this is judged again.")
	fs.IntVar(&down.MaxBulkSoftTaintCount, "max-bulk-soft-taint-count", down.MaxBulkSoftTaintCount, "Most nodes soft-tainted (PreferNoSchedule) or untainted per loop; 0 turns soft tainting off.")
	// Drain rules from upstream's drainability rules (upstream's spelling of "distruption").
	fs.DurationVar(&down.BlockingSystemPodDisruptionTimeout, "blocking-system-pod-distruption-timeout", down.BlockingSystemPodDisruptionTimeout,
		"With --skip-nodes-with-system-pods, a kube-system pod without a PodDisruptionBudget blocks its node only this long after its creation.")
	fs.IntVar(&down.MinReplicaCount, "min-replica-count", down.MinReplicaCount,
		"With --skip-nodes-with-custom-controller-pods, pods of ReplicaSets and ReplicationControllers with fewer replicas than this keep their node; 0 turns it off.")
	f.defineConsolidation()
	f.defineRepair()
	f.defineProvisioning()
	f.defineCapacityBuffers()
	f.defineInterruption()
	f.defineForecast()
}
