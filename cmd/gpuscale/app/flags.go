package app

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// ClusterAutoscalerConfig holds the `gpuscale cluster-autoscaler` flags as
// given. Every flag keeps the upstream Cluster Autoscaler's name and
// default; Options and Shell validate them and turn them into the decision
// core's options and the live shell's.
type ClusterAutoscalerConfig struct {
	// Cluster and provider.
	Kubeconfig             string
	CloudProvider          string
	CloudConfig            string
	Namespace              string
	Nodes                  []string
	NodeGroupAutoDiscovery []string
	ScanInterval           time.Duration

	// Scale-up.
	Expander                     string
	Seed                         int64
	MaxNodesTotal                int
	CoresTotal                   string
	MemoryTotal                  string
	GPUTotal                     []string
	MaxNodesPerScaleUp           int
	MaxNodeProvisionTime         time.Duration
	MaxNodeStartupTime           time.Duration
	InitialNodeGroupBackoff      time.Duration
	MaxNodeGroupBackoff          time.Duration
	NodeGroupBackoffReset        time.Duration
	BalanceSimilarNodeGroups     bool
	BalancingIgnoreLabels        []string
	ExpendablePodsPriorityCutoff int
	NewPodScaleUpDelay           time.Duration

	// Scale-down.
	ScaleDownEnabled                  bool
	ScaleDownUtilizationThreshold     float64
	ScaleDownGPUUtilizationThreshold  float64
	ScaleDownUnneededTime             time.Duration
	ScaleDownUnreadyTime              time.Duration
	ScaleDownUnreadyEnabled           bool
	ScaleDownDelayAfterAdd            time.Duration
	ScaleDownDelayAfterDelete         time.Duration
	ScaleDownDelayAfterFailure        time.Duration
	MaxScaleDownParallelism           int
	MaxDrainParallelism               int
	ScaleDownNonEmptyCandidatesCount  int
	SkipNodesWithLocalStorage         bool
	SkipNodesWithSystemPods           bool
	SkipNodesWithCustomControllerPods bool
	MaxGracefulTerminationSec         int
	MaxPodEvictionTime                time.Duration
	IgnoreDaemonSetsUtilization       bool
	IgnoreMirrorPodsUtilization       bool
	DaemonSetEvictionForEmptyNodes    bool
	DaemonSetEvictionForOccupiedNodes bool
	MaxCloudProviderNodeDeletionTime  time.Duration
	MaxBulkSoftTaintCount             int
	// Drain rules from upstream's drainability rules.
	BlockingSystemPodDisruptionTimeout time.Duration
	MinReplicaCount                    int

	// Operation and logging.
	LeaderElect                  bool
	LeaderElectResourceNamespace string
	LeaderElectResourceName      string
	LeaderElectLeaseDuration     time.Duration
	LeaderElectRenewDeadline     time.Duration
	LeaderElectRetryPeriod       time.Duration
	Address                      string
	StatusConfigMapName          string
	WriteStatusConfigMap         bool
	Verbosity                    int
	LogToStderr                  bool
	StderrThreshold              string
}

// ClusterAutoscalerFlags defines the flags on fs with the upstream
// defaults and returns the config they fill in.
func ClusterAutoscalerFlags(fs *pflag.FlagSet) *ClusterAutoscalerConfig {
	c := &ClusterAutoscalerConfig{}
	d := autoscaler.DefaultOptions()
	up, down, cs := d.ScaleUp, d.ScaleDown, d.ClusterState

	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; empty means in-cluster configuration.")
	fs.StringVar(&c.CloudProvider, "cloud-provider", "gce", "Cloud provider type: "+joinNames(cloudProviders)+".")
	fs.StringVar(&c.CloudConfig, "cloud-config", "", "Path to the cloud provider configuration file; empty for none (kwok then reads the ConfigMap gpuscale-kwok-config).")
	fs.StringVar(&c.Namespace, "namespace", "kube-system", "Namespace the autoscaler runs in: its status ConfigMap, priority-expander ConfigMap and lease live here.")
	fs.StringArrayVar(&c.Nodes, "nodes", nil, "A node group to manage, as <min>:<max>:<name>. Can be used multiple times.")
	fs.StringArrayVar(&c.NodeGroupAutoDiscovery, "node-group-auto-discovery", nil,
		"Node group auto-discovery: asg:tag=<key>[=<value>],... (aws) or mig:namePrefix=<prefix>,min=<n>,max=<n> (gce). Can be used multiple times.")
	fs.DurationVar(&c.ScanInterval, "scan-interval", 10*time.Second, "How often the cluster is re-evaluated for scale-up or scale-down.")

	fs.StringVar(&c.Expander, "expander", up.Expander, "Node group expanders, comma-separated, applied in order: "+joinNames(expanderNames())+".")
	fs.Int64Var(&c.Seed, "seed", up.Seed, "Seed of the expanders' random tie-break; the same seed chooses the same.")
	fs.IntVar(&c.MaxNodesTotal, "max-nodes-total", d.Limits.MaxNodesTotal, "Maximum number of nodes in all node groups; 0 means no limit.")
	fs.StringVar(&c.CoresTotal, "cores-total", rangeString(d.Limits.Cores), "Minimum and maximum number of cores in the cluster, as <min>:<max>.")
	fs.StringVar(&c.MemoryTotal, "memory-total", rangeString(d.Limits.MemoryGiB), "Minimum and maximum GiB of memory in the cluster, as <min>:<max>.")
	fs.StringArrayVar(&c.GPUTotal, "gpu-total", nil, "Minimum and maximum number of GPUs of a type in the cluster, as <type>:<min>:<max>. Can be used multiple times.")
	fs.IntVar(&c.MaxNodesPerScaleUp, "max-nodes-per-scaleup", up.MaxNodesPerScaleUp, "Maximum number of nodes added in one scale-up.")
	fs.DurationVar(&c.MaxNodeProvisionTime, "max-node-provision-time", cs.MaxNodeProvisionTime, "How long a scale-up may take to register its nodes before the group is backed off.")
	fs.DurationVar(&c.MaxNodeStartupTime, "max-node-startup-time", cs.MaxNodeStartupTime, "How long a registered node (a GPU node: until it advertises its GPUs) may take to become ready.")
	fs.DurationVar(&c.InitialNodeGroupBackoff, "initial-node-group-backoff-duration", cs.Backoff.Initial, "Backoff of a node group after its first failed scale-up.")
	fs.DurationVar(&c.MaxNodeGroupBackoff, "max-node-group-backoff-duration", cs.Backoff.Max, "Longest backoff of a node group; each further failure doubles it up to this.")
	fs.DurationVar(&c.NodeGroupBackoffReset, "node-group-backoff-reset-timeout", cs.Backoff.Reset, "Time without failure after which a node group's backoff starts over.")
	fs.BoolVar(&c.BalanceSimilarNodeGroups, "balance-similar-node-groups", up.BalanceSimilarNodeGroups, "Spread scale-ups across similar node groups (e.g. one per zone).")
	fs.StringArrayVar(&c.BalancingIgnoreLabels, "balancing-ignore-label", nil, "A label that may differ between similar node groups. Can be used multiple times.")
	fs.IntVar(&c.ExpendablePodsPriorityCutoff, "expendable-pods-priority-cutoff", int(d.ExpendablePodsPriorityCutoff), "Pods with priority below this never trigger scale-up nor block scale-down.")
	fs.DurationVar(&c.NewPodScaleUpDelay, "new-pod-scale-up-delay", up.NewPodScaleUpDelay, "Pods younger than this are not considered for scale-up.")

	fs.BoolVar(&c.ScaleDownEnabled, "scale-down-enabled", d.ScaleDownEnabled, "Whether to scale down the cluster.")
	fs.Float64Var(&c.ScaleDownUtilizationThreshold, "scale-down-utilization-threshold", down.UtilizationThreshold, "A node without GPUs is a scale-down candidate when the larger of its cpu and memory requests over allocatable is below this.")
	fs.Float64Var(&c.ScaleDownGPUUtilizationThreshold, "scale-down-gpu-utilization-threshold", down.GPUUtilizationThreshold, "A GPU node is a scale-down candidate when its GPU requests over allocatable GPUs are below this.")
	fs.DurationVar(&c.ScaleDownUnneededTime, "scale-down-unneeded-time", down.UnneededTime, "How long a node must be unneeded before it is removed.")
	fs.DurationVar(&c.ScaleDownUnreadyTime, "scale-down-unready-time", down.UnreadyTime, "How long an unready node must be unneeded before it is removed.")
	fs.BoolVar(&c.ScaleDownUnreadyEnabled, "scale-down-unready-enabled", down.UnreadyEnabled, "Whether unready nodes may be removed.")
	fs.DurationVar(&c.ScaleDownDelayAfterAdd, "scale-down-delay-after-add", down.DelayAfterAdd, "How long after a scale-up scale-down evaluation resumes.")
	fs.DurationVar(&c.ScaleDownDelayAfterDelete, "scale-down-delay-after-delete", down.DelayAfterDelete, "How long after a node removal scale-down evaluation resumes.")
	fs.DurationVar(&c.ScaleDownDelayAfterFailure, "scale-down-delay-after-failure", down.DelayAfterFailure, "How long after a failed removal scale-down evaluation resumes.")
	fs.IntVar(&c.MaxScaleDownParallelism, "max-scale-down-parallelism", down.MaxScaleDownParallelism, "Most nodes (empty or drained) removed at once; 0 means no limit.")
	fs.IntVar(&c.MaxDrainParallelism, "max-drain-parallelism", down.MaxDrainParallelism, "Most non-empty nodes drained at once; 0 means no limit.")
	fs.IntVar(&c.ScaleDownNonEmptyCandidatesCount, "scale-down-non-empty-candidates-count", down.NonEmptyCandidatesCount, "Most non-empty nodes simulated for removal per loop; 0 or less means no limit.")
	fs.BoolVar(&c.SkipNodesWithLocalStorage, "skip-nodes-with-local-storage", down.SkipNodesWithLocalStorage, "Never remove nodes with pods using local storage (emptyDir, hostPath).")
	fs.BoolVar(&c.SkipNodesWithSystemPods, "skip-nodes-with-system-pods", down.SkipNodesWithSystemPods, "Never remove nodes with kube-system pods no PodDisruptionBudget covers (DaemonSet and mirror pods aside).")
	fs.BoolVar(&c.SkipNodesWithCustomControllerPods, "skip-nodes-with-custom-controller-pods", down.SkipNodesWithCustomControllerPods, "Never remove nodes with pods owned by controllers other than ReplicaSet, ReplicationController, Job and StatefulSet.")
	fs.IntVar(&c.MaxGracefulTerminationSec, "max-graceful-termination-sec", down.MaxGracefulTerminationSec, "Longest grace period, in seconds, given to a pod evicted for scale-down.")
	fs.DurationVar(&c.MaxPodEvictionTime, "max-pod-eviction-time", 2*time.Minute, "How long eviction of a pod is retried before the node's removal fails.")
	fs.BoolVar(&c.IgnoreDaemonSetsUtilization, "ignore-daemonsets-utilization", down.IgnoreDaemonSetsUtilization, "Leave DaemonSet pods out of node utilization.")
	fs.BoolVar(&c.IgnoreMirrorPodsUtilization, "ignore-mirror-pods-utilization", down.IgnoreMirrorPodsUtilization, "Leave mirror (static) pods out of node utilization.")
	fs.BoolVar(&c.DaemonSetEvictionForEmptyNodes, "daemonset-eviction-for-empty-nodes", down.DaemonSetEvictionForEmptyNodes, "Evict DaemonSet pods gracefully from empty nodes before removal.")
	fs.BoolVar(&c.DaemonSetEvictionForOccupiedNodes, "daemonset-eviction-for-occupied-nodes", down.DaemonSetEvictionForOccupiedNodes, "Evict DaemonSet pods gracefully from drained nodes before removal.")
	fs.DurationVar(&c.MaxCloudProviderNodeDeletionTime, "max-cloud-provider-node-deletion-time", down.MaxCloudProviderNodeDeletionTime, "A node tainted for deletion longer ago than this is judged again.")
	fs.IntVar(&c.MaxBulkSoftTaintCount, "max-bulk-soft-taint-count", down.MaxBulkSoftTaintCount, "Most nodes soft-tainted (PreferNoSchedule) or untainted per loop; 0 turns soft tainting off.")
	// Drain rules from upstream's drainability rules (upstream's spelling of "distruption").
	fs.DurationVar(&c.BlockingSystemPodDisruptionTimeout, "blocking-system-pod-distruption-timeout", down.BlockingSystemPodDisruptionTimeout,
		"With --skip-nodes-with-system-pods, a kube-system pod without a PodDisruptionBudget blocks its node only this long after its creation.")
	fs.IntVar(&c.MinReplicaCount, "min-replica-count", down.MinReplicaCount,
		"With --skip-nodes-with-custom-controller-pods, pods of ReplicaSets and ReplicationControllers with fewer replicas than this keep their node; 0 turns it off.")

	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "Run only while holding the leader lease, so one replica acts.")
	fs.StringVar(&c.LeaderElectResourceNamespace, "leader-elect-resource-namespace", "", "Namespace of the leader lease; empty means --namespace.")
	fs.StringVar(&c.LeaderElectResourceName, "leader-elect-resource-name", "cluster-autoscaler", "Name of the leader Lease.")
	fs.DurationVar(&c.LeaderElectLeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking the lease.")
	fs.DurationVar(&c.LeaderElectRenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it stops leading.")
	fs.DurationVar(&c.LeaderElectRetryPeriod, "leader-elect-retry-period", 2*time.Second, "How long to wait between attempts to acquire or renew the lease.")
	fs.StringVar(&c.Address, "address", ":8085", "Address serving Prometheus metrics (/metrics) and health checks.")
	fs.StringVar(&c.StatusConfigMapName, "status-config-map-name", "cluster-autoscaler-status", "Name of the status ConfigMap.")
	fs.BoolVar(&c.WriteStatusConfigMap, "write-status-configmap", true, "Whether to write the status ConfigMap.")

	// Logging flags of upstream's klog that deployment manifests carry
	// (the EKS guide passes --v=4 --stderrthreshold=info): refusing them
	// would stop people switching over at the first line.
	fs.IntVarP(&c.Verbosity, "v", "v", 0, "Log verbosity; higher logs more.")
	fs.BoolVar(&c.LogToStderr, "logtostderr", true, "Accepted for compatibility; gpuscale always logs to stderr.")
	fs.StringVar(&c.StderrThreshold, "stderrthreshold", "INFO", "Accepted for compatibility: INFO, WARNING, ERROR or FATAL (or 0-3).")
	return c
}
