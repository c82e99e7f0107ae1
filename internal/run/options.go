package run

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
	awsprovider "github.com/gpuscale/gpuscale/pkg/cloudprovider/aws"
	"github.com/gpuscale/gpuscale/pkg/controller"
)

// cloudProviders are the --cloud-provider values this binary knows.
var cloudProviders = []string{"aws", "gce", "kwok"}

// leaderElectionJitter is client-go's leaderelection.JitterFactor: the
// renew deadline must exceed it times the retry period.
const leaderElectionJitter = 1.2

// ClusterAutoscalerOptions are `gpuscale cluster-autoscaler`'s flags: the
// decision flags every shell shares (package autoscalerflags) and the
// live shell's own.
type ClusterAutoscalerOptions struct {
	Decision *autoscalerflags.Flags
	Shell    ShellOptions
}

// ShellOptions are what the live shell needs besides the decision core's
// options: where the cluster and the node groups are, and how to run.
type ShellOptions struct {
	Kubeconfig string
	// KubeClientQPS and KubeClientBurst rate-limit the API client
	// (--kube-client-qps, --kube-client-burst): client-go's token bucket,
	// with upstream's defaults of 5 and 10.
	KubeClientQPS   float64
	KubeClientBurst int
	CloudProvider   string
	CloudConfig     string
	Namespace       string
	// AWSInterruptionQueue is the SQS queue of EC2 interruption events
	// (--aws-interruption-queue), empty for none.
	AWSInterruptionQueue string
	// NodeGroups are the --nodes values, in flag order.
	NodeGroups []NodeGroupSpec
	// AutoDiscovery are the --node-group-auto-discovery values.
	AutoDiscovery        []AutoDiscoverySpec
	MaxPodEvictionTime   time.Duration
	Address              string
	LeaderElection       controller.LeaderElection
	Liveness             controller.Liveness
	StatusConfigMapName  string
	WriteStatusConfigMap bool
	// ShardPeers are the status ConfigMaps of the other shards
	// (--shard-peer-status-config-map).
	ShardPeers []string
	// EmitPerNodeGroupMetrics (--emit-per-nodegroup-metrics).
	EmitPerNodeGroupMetrics bool
	// Verbosity is --v; LogToStderr and StderrThreshold are accepted for
	// compatibility with upstream manifests.
	Verbosity       int
	LogToStderr     bool
	StderrThreshold string

	// parse errors of --nodes and --node-group-auto-discovery, for Validate.
	specErrs []error
}

// NodeGroupSpec is one --nodes value. Name may contain colons (GCE
// instance-group URLs do).
type NodeGroupSpec struct {
	Min, Max int
	Name     string
}

// AutoDiscoverySpec is one --node-group-auto-discovery value.
type AutoDiscoverySpec struct {
	// Kind is "asg" (AWS) or "mig" (GCE).
	Kind string
	// Tags match Auto Scaling group tags (asg): key to value, "" for any value.
	Tags map[string]string
	// NamePrefix, MinSize and MaxSize select instance groups (mig).
	NamePrefix       string
	MinSize, MaxSize int
	// Value is the flag's value as given.
	Value string
}

// NewClusterAutoscalerOptions returns the upstream defaults.
func NewClusterAutoscalerOptions() *ClusterAutoscalerOptions {
	le := controller.DefaultLeaderElection()
	return &ClusterAutoscalerOptions{
		Decision: autoscalerflags.New(),
		Shell: ShellOptions{
			CloudProvider: "gce", Namespace: "kube-system", MaxPodEvictionTime: 2 * time.Minute, Address: ":8085",
			LeaderElection: le, Liveness: controller.DefaultLiveness(),
			StatusConfigMapName: "cluster-autoscaler-status", WriteStatusConfigMap: true,
			LogToStderr: true, StderrThreshold: "INFO",
			KubeClientQPS: float64(rest.DefaultQPS), KubeClientBurst: rest.DefaultBurst,
		},
	}
}

// AddFlags defines every flag on fs: the shell's first, then the decision
// flags.
func (o *ClusterAutoscalerOptions) AddFlags(fs *pflag.FlagSet) {
	s := &o.Shell
	fs.StringVar(&s.Kubeconfig, "kubeconfig", s.Kubeconfig, "Path to a kubeconfig file; empty means in-cluster configuration.")
	fs.Float64Var(&s.KubeClientQPS, "kube-client-qps", s.KubeClientQPS, "Requests a second the API client makes on average (taints, evictions, status, events); a loop's actions share it.")
	fs.IntVar(&s.KubeClientBurst, "kube-client-burst", s.KubeClientBurst, "Requests the API client may make at once above --kube-client-qps; also how many API calls one action of a loop makes at once.")
	fs.StringVar(&s.CloudProvider, "cloud-provider", s.CloudProvider, "Cloud provider type: "+strings.Join(cloudProviders, ", ")+".")
	fs.StringVar(&s.CloudConfig, "cloud-config", s.CloudConfig, "Path to the cloud provider configuration file; empty for none (kwok then reads the ConfigMap gpuscale-kwok-config).")
	fs.StringVar(&s.AWSInterruptionQueue, "aws-interruption-queue", s.AWSInterruptionQueue,
		"With --cloud-provider=aws: the SQS queue (name or URL) EventBridge sends EC2 interruption events to (spot interruption warnings, rebalance recommendations, instance state changes, AWS Health scheduled changes); each event taints its node as the interruption taints do. Empty for none.")
	fs.StringVar(&s.Namespace, "namespace", s.Namespace, "Namespace the autoscaler runs in: its status ConfigMap, priority-expander ConfigMap and lease live here.")
	fs.Var(&nodesValue{s}, "nodes", "A node group to manage, as <min>:<max>:<name>. Can be used multiple times.")
	fs.Var(&discoveryValue{s}, "node-group-auto-discovery",
		"Node group auto-discovery: asg:tag=<key>[=<value>],... (aws) or mig:namePrefix=<prefix>,min=<n>,max=<n> (gce). Can be used multiple times.")
	fs.DurationVar(&s.MaxPodEvictionTime, "max-pod-eviction-time", s.MaxPodEvictionTime, "How long a failed eviction of a pod (a budget's refusal, a conflict, a server error) is retried before the node's removal fails.")
	fs.DurationVar(&s.Liveness.MaxInactivity, "max-inactivity", s.Liveness.MaxInactivity, "The health check fails when no loop has started for this long.")
	fs.DurationVar(&s.Liveness.MaxFailingTime, "max-failing-time", s.Liveness.MaxFailingTime, "The health check fails when no loop has succeeded for this long.")
	fs.DurationVar(&s.Liveness.MaxStartupTime, "max-startup-time", s.Liveness.MaxStartupTime, "The health check fails when no loop has succeeded this long after the replica started leading.")
	le := &s.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "Run only while holding the leader lease, so one replica acts.")
	fs.StringVar(&le.Namespace, "leader-elect-resource-namespace", "", "Namespace of the leader lease; empty means --namespace.")
	fs.StringVar(&le.Name, "leader-elect-resource-name", le.Name, "Name of the leader Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "How long a non-leader waits after the last renewal before taking the lease.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "How long the leader keeps trying to renew before it stops leading.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "How long to wait between attempts to acquire or renew the lease.")
	fs.StringVar(&s.Address, "address", s.Address, "Address serving Prometheus metrics (/metrics) and health checks (/health-check).")
	fs.StringVar(&s.StatusConfigMapName, "status-config-map-name", s.StatusConfigMapName, "Name of the status ConfigMap.")
	fs.BoolVar(&s.WriteStatusConfigMap, "write-status-configmap", s.WriteStatusConfigMap, "Whether to write the status ConfigMap.")
	fs.StringArrayVar(&s.ShardPeers, "shard-peer-status-config-map", nil,
		"The status ConfigMap (in --namespace) of another autoscaler sharing the cluster with other node groups: pods it claims are not scaled up again; this one publishes its own claims. Can be used multiple times.")
	fs.BoolVar(&s.EmitPerNodeGroupMetrics, "emit-per-nodegroup-metrics", s.EmitPerNodeGroupMetrics, "Serve the per-node-group gauges (node_group_min_count, node_group_max_count, node_group_target_count, node_group_healthiness, node_group_backoff_status).")
	// Logging flags of upstream's klog that deployment manifests carry
	// (the EKS guide passes --v=4 --stderrthreshold=info): refusing them
	// would stop people switching over at the first line.
	fs.IntVarP(&s.Verbosity, "v", "v", s.Verbosity, "Log verbosity; higher logs more.")
	fs.BoolVar(&s.LogToStderr, "logtostderr", s.LogToStderr, "Accepted for compatibility; gpuscale always logs to stderr.")
	fs.StringVar(&s.StderrThreshold, "stderrthreshold", s.StderrThreshold, "Accepted for compatibility: INFO, WARNING, ERROR or FATAL (or 0-3).")
	fs.AddFlagSet(o.Decision.FlagSet())
}

// Validate reports every bad flag, each message starting with the flag's
// name and ending with the value given, and settles the defaults that
// follow other flags (the lease namespace follows --namespace).
func (o *ClusterAutoscalerOptions) Validate() error {
	errs := []error{o.Decision.Validate()}
	s := &o.Shell
	v := &flagErrors{}
	if !contains(cloudProviders, s.CloudProvider) {
		v.add("cloud-provider", "unknown provider %q (known: %s)", s.CloudProvider, strings.Join(cloudProviders, ", "))
	}
	v.dnsLabel("namespace", s.Namespace)
	v.errs = append(v.errs, s.specErrs...)
	for _, d := range s.AutoDiscovery {
		if p := map[string]string{"asg": "aws", "mig": "gce"}[d.Kind]; p != s.CloudProvider {
			v.add("node-group-auto-discovery", "%s discovery needs --cloud-provider=%s, not %s, got %q", d.Kind, p, s.CloudProvider, d.Value)
		}
	}
	if q := s.AWSInterruptionQueue; q != "" {
		if s.CloudProvider != "aws" {
			v.add("aws-interruption-queue", "needs --cloud-provider=aws, not %s, got %q", s.CloudProvider, q)
		} else if err := awsprovider.ValidateQueue(q); err != nil {
			v.add("aws-interruption-queue", "%v", err)
		}
	}
	if !(s.KubeClientQPS > 0) || math.IsInf(s.KubeClientQPS, 0) {
		v.add("kube-client-qps", "must be a number above 0, got %v", s.KubeClientQPS)
	}
	if s.KubeClientBurst < 1 {
		v.add("kube-client-burst", "must be at least 1, got %d", s.KubeClientBurst)
	}
	v.positive("max-pod-eviction-time", s.MaxPodEvictionTime)
	v.positive("max-inactivity", s.Liveness.MaxInactivity)
	v.positive("max-failing-time", s.Liveness.MaxFailingTime)
	// As upstream: the start-up limit is at least the other two.
	s.Liveness.MaxStartupTime = max(s.Liveness.MaxStartupTime, s.Liveness.MaxInactivity, s.Liveness.MaxFailingTime)
	o.validateOperation(v)
	errs = append(errs, v.errs...)
	if s.LeaderElection.Namespace == "" {
		s.LeaderElection.Namespace = s.Namespace
	}
	return errors.Join(errs...)
}

func (o *ClusterAutoscalerOptions) validateOperation(v *flagErrors) {
	s := &o.Shell
	le := s.LeaderElection
	if le.Namespace != "" {
		v.dnsLabel("leader-elect-resource-namespace", le.Namespace)
	}
	v.dnsSubdomain("leader-elect-resource-name", le.Name)
	v.dnsSubdomain("status-config-map-name", s.StatusConfigMapName)
	for _, p := range s.ShardPeers {
		v.dnsSubdomain("shard-peer-status-config-map", p)
		if p == s.StatusConfigMapName {
			v.add("shard-peer-status-config-map", "names this autoscaler's own --status-config-map-name, got %q", p)
		}
	}
	if len(s.ShardPeers) > 0 && !s.WriteStatusConfigMap {
		v.add("shard-peer-status-config-map", "shards publish their claims in their status ConfigMap: needs --write-status-configmap=true, got %q", s.ShardPeers[0])
	}
	if le.Enabled {
		// client-go's leader elector refuses these at start; say which flag.
		v.positive("leader-elect-retry-period", le.RetryPeriod)
		if le.LeaseDuration <= le.RenewDeadline {
			v.add("leader-elect-lease-duration", "must be longer than --leader-elect-renew-deadline (%s), got %s", le.RenewDeadline, le.LeaseDuration)
		}
		if float64(le.RenewDeadline) <= leaderElectionJitter*float64(le.RetryPeriod) {
			v.add("leader-elect-renew-deadline", "must be longer than %.1f x --leader-elect-retry-period (%s), got %s", leaderElectionJitter, le.RetryPeriod, le.RenewDeadline)
		}
	}
	if _, port, err := net.SplitHostPort(s.Address); err != nil {
		v.add("address", "want [host]:port, got %q", s.Address)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add("address", "port must be a number from 0 to 65535, got %q", s.Address)
	}
	if s.Verbosity < 0 {
		v.add("v", "must not be negative, got %d", s.Verbosity)
	}
	switch strings.ToUpper(s.StderrThreshold) {
	case "INFO", "WARNING", "ERROR", "FATAL", "0", "1", "2", "3":
	default:
		v.add("stderrthreshold", "want INFO, WARNING, ERROR or FATAL, got %q", s.StderrThreshold)
	}
}

// flagErrors collects messages of the form "--flag: rule, got value".
type flagErrors struct{ errs []error }

func (v *flagErrors) add(flag, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

func (v *flagErrors) positive(flag string, d time.Duration) {
	if d <= 0 {
		v.add(flag, "must be positive, got %s", d)
	}
}

func (v *flagErrors) dnsLabel(flag, s string) {
	if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
		v.add(flag, "not a namespace name (%s), got %q", strings.Join(msgs, ", "), s)
	}
}

func (v *flagErrors) dnsSubdomain(flag, s string) {
	if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
		v.add(flag, "not an object name (%s), got %q", strings.Join(msgs, ", "), s)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
