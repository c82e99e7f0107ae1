package app

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
)

// cloudProviders are the --cloud-provider values this binary knows.
var cloudProviders = []string{"aws", "gce", "kwok"}

// leaderElectionJitter is client-go's leaderelection.JitterFactor: the
// renew deadline must exceed it times the retry period.
const leaderElectionJitter = 1.2

// ShellOptions are what the live shell needs besides the decision core's
// options: where the cluster and the node groups are, and how to run.
type ShellOptions struct {
	Kubeconfig    string
	CloudProvider string
	CloudConfig   string
	Namespace     string
	// NodeGroups are the --nodes values, in flag order.
	NodeGroups []NodeGroupSpec
	// AutoDiscovery are the --node-group-auto-discovery values.
	AutoDiscovery        []AutoDiscoverySpec
	ScanInterval         time.Duration
	MaxPodEvictionTime   time.Duration
	Address              string
	LeaderElection       LeaderElectionOptions
	StatusConfigMapName  string
	WriteStatusConfigMap bool
	// Verbosity is --v.
	Verbosity int
}

// LeaderElectionOptions configure the Lease; Namespace is already
// defaulted to --namespace.
type LeaderElectionOptions struct {
	Enabled       bool
	Namespace     string
	Name          string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
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
}

// Options validates every flag and returns the decision core's options.
// The priority expander's ConfigMap is not read here: with
// --expander=priority the caller must set ScaleUp.Priorities (from
// expander.PriorityConfigMapName in --namespace) before autoscaler.New.
func (c *ClusterAutoscalerConfig) Options() (autoscaler.Options, error) {
	if err := c.Validate(); err != nil {
		return autoscaler.Options{}, err
	}
	return c.options(), nil
}

// Shell validates every flag and returns the live shell's options.
func (c *ClusterAutoscalerConfig) Shell() (ShellOptions, error) {
	if err := c.Validate(); err != nil {
		return ShellOptions{}, err
	}
	groups, _ := parseNodes(c.Nodes)
	discovery, _ := parseAutoDiscovery(c.NodeGroupAutoDiscovery, c.CloudProvider)
	ns := c.LeaderElectResourceNamespace
	if ns == "" {
		ns = c.Namespace
	}
	return ShellOptions{
		Kubeconfig: c.Kubeconfig, CloudProvider: c.CloudProvider, CloudConfig: c.CloudConfig,
		Namespace: c.Namespace, NodeGroups: groups, AutoDiscovery: discovery,
		ScanInterval: c.ScanInterval, MaxPodEvictionTime: c.MaxPodEvictionTime, Address: c.Address,
		LeaderElection: LeaderElectionOptions{
			Enabled: c.LeaderElect, Namespace: ns, Name: c.LeaderElectResourceName,
			LeaseDuration: c.LeaderElectLeaseDuration, RenewDeadline: c.LeaderElectRenewDeadline,
			RetryPeriod: c.LeaderElectRetryPeriod,
		},
		StatusConfigMapName: c.StatusConfigMapName, WriteStatusConfigMap: c.WriteStatusConfigMap,
		Verbosity: c.Verbosity,
	}, nil
}

// options maps validated flags; parse errors cannot happen here.
func (c *ClusterAutoscalerConfig) options() autoscaler.Options {
	lim := limits.Default()
	lim.MaxNodesTotal = c.MaxNodesTotal
	lim.Cores, _ = limits.ParseRange("cores-total", c.CoresTotal)
	lim.MemoryGiB, _ = limits.ParseRange("memory-total", c.MemoryTotal)
	for _, v := range c.GPUTotal {
		typ, r, _ := limits.ParseGPUTotal(v)
		if lim.GPUs == nil {
			lim.GPUs = map[string]limits.Range{}
		}
		lim.GPUs[typ] = r
	}
	up := scaleup.DefaultOptions()
	up.Expander = c.Expander
	up.Seed = c.Seed
	up.MaxNodesPerScaleUp = c.MaxNodesPerScaleUp
	up.BalanceSimilarNodeGroups = c.BalanceSimilarNodeGroups
	up.BalancingIgnoreLabels = nonEmpty(c.BalancingIgnoreLabels)
	up.NewPodScaleUpDelay = c.NewPodScaleUpDelay

	down := scaledown.DefaultOptions()
	down.UtilizationThreshold = c.ScaleDownUtilizationThreshold
	down.GPUUtilizationThreshold = c.ScaleDownGPUUtilizationThreshold
	down.UnneededTime = c.ScaleDownUnneededTime
	down.UnreadyTime = c.ScaleDownUnreadyTime
	down.UnreadyEnabled = c.ScaleDownUnreadyEnabled
	down.DelayAfterAdd = c.ScaleDownDelayAfterAdd
	down.DelayAfterDelete = c.ScaleDownDelayAfterDelete
	down.DelayAfterFailure = c.ScaleDownDelayAfterFailure
	down.MaxScaleDownParallelism = c.MaxScaleDownParallelism
	down.MaxDrainParallelism = c.MaxDrainParallelism
	down.NonEmptyCandidatesCount = c.ScaleDownNonEmptyCandidatesCount
	down.SkipNodesWithLocalStorage = c.SkipNodesWithLocalStorage
	down.SkipNodesWithSystemPods = c.SkipNodesWithSystemPods
	down.SkipNodesWithCustomControllerPods = c.SkipNodesWithCustomControllerPods
	down.MaxGracefulTerminationSec = c.MaxGracefulTerminationSec
	down.IgnoreDaemonSetsUtilization = c.IgnoreDaemonSetsUtilization
	down.IgnoreMirrorPodsUtilization = c.IgnoreMirrorPodsUtilization
	down.DaemonSetEvictionForEmptyNodes = c.DaemonSetEvictionForEmptyNodes
	down.DaemonSetEvictionForOccupiedNodes = c.DaemonSetEvictionForOccupiedNodes
	down.MaxCloudProviderNodeDeletionTime = c.MaxCloudProviderNodeDeletionTime
	down.MaxBulkSoftTaintCount = c.MaxBulkSoftTaintCount
	down.BlockingSystemPodDisruptionTimeout = c.BlockingSystemPodDisruptionTimeout
	down.MinReplicaCount = c.MinReplicaCount

	// autoscaler.New copies Limits and the cutoff into both halves; they
	// are set there too so the halves are right even when used alone.
	cutoff := int32(c.ExpendablePodsPriorityCutoff)
	up.Limits, down.Limits = lim, lim
	up.ExpendablePodsPriorityCutoff, down.ExpendablePodsPriorityCutoff = cutoff, cutoff

	return autoscaler.Options{
		ScaleUp:   up,
		ScaleDown: down,
		ClusterState: clusterstate.Options{
			MaxNodeProvisionTime: c.MaxNodeProvisionTime,
			MaxNodeStartupTime:   c.MaxNodeStartupTime,
			Backoff: clusterstate.BackoffOptions{
				Initial: c.InitialNodeGroupBackoff, Max: c.MaxNodeGroupBackoff, Reset: c.NodeGroupBackoffReset,
			},
		},
		ScaleDownEnabled:             c.ScaleDownEnabled,
		Limits:                       lim,
		ExpendablePodsPriorityCutoff: cutoff,
	}
}

// Validate reports every bad flag, each message starting with the flag's
// name and ending with the value given.
func (c *ClusterAutoscalerConfig) Validate() error {
	v := &flagErrors{}
	if !contains(cloudProviders, c.CloudProvider) {
		v.add("cloud-provider", "unknown provider %q (known: %s)", c.CloudProvider, joinNames(cloudProviders))
	}
	v.dnsLabel("namespace", c.Namespace)
	if _, err := parseNodes(c.Nodes); err != nil {
		v.errs = append(v.errs, err)
	}
	if _, err := parseAutoDiscovery(c.NodeGroupAutoDiscovery, c.CloudProvider); err != nil {
		v.errs = append(v.errs, err)
	}
	v.positive("scan-interval", c.ScanInterval)
	if err := validateExpander(c.Expander); err != nil {
		v.errs = append(v.errs, err)
	}
	v.notNegativeInt("max-nodes-total", c.MaxNodesTotal)
	if _, err := limits.ParseRange("cores-total", c.CoresTotal); err != nil {
		v.errs = append(v.errs, err)
	}
	if _, err := limits.ParseRange("memory-total", c.MemoryTotal); err != nil {
		v.errs = append(v.errs, err)
	}
	seenGPU := map[string]bool{}
	for _, value := range c.GPUTotal {
		typ, _, err := limits.ParseGPUTotal(value)
		switch {
		case err != nil:
			v.errs = append(v.errs, err)
		case seenGPU[typ]:
			v.add("gpu-total", "GPU type %q given twice, got %q", typ, value)
		}
		seenGPU[typ] = true
	}
	if c.MaxNodesPerScaleUp <= 0 {
		v.add("max-nodes-per-scaleup", "must be positive, got %d", c.MaxNodesPerScaleUp)
	}
	v.positive("max-node-provision-time", c.MaxNodeProvisionTime)
	v.positive("max-node-startup-time", c.MaxNodeStartupTime)
	v.positive("initial-node-group-backoff-duration", c.InitialNodeGroupBackoff)
	if c.MaxNodeGroupBackoff < c.InitialNodeGroupBackoff {
		v.add("max-node-group-backoff-duration", "must not be below --initial-node-group-backoff-duration (%s), got %s", c.InitialNodeGroupBackoff, c.MaxNodeGroupBackoff)
	}
	v.positive("node-group-backoff-reset-timeout", c.NodeGroupBackoffReset)
	for _, l := range c.BalancingIgnoreLabels {
		if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
			v.add("balancing-ignore-label", "not a label key (%s), got %q", strings.Join(msgs, ", "), l)
		}
	}
	if c.ExpendablePodsPriorityCutoff < math.MinInt32 || c.ExpendablePodsPriorityCutoff > math.MaxInt32 {
		v.add("expendable-pods-priority-cutoff", "must fit a pod priority (int32), got %d", c.ExpendablePodsPriorityCutoff)
	}
	v.notNegative("new-pod-scale-up-delay", c.NewPodScaleUpDelay)
	c.validateScaleDown(v)
	c.validateOperation(v)
	return errors.Join(v.errs...)
}

func (c *ClusterAutoscalerConfig) validateScaleDown(v *flagErrors) {
	v.fraction("scale-down-utilization-threshold", c.ScaleDownUtilizationThreshold)
	v.fraction("scale-down-gpu-utilization-threshold", c.ScaleDownGPUUtilizationThreshold)
	v.notNegative("scale-down-unneeded-time", c.ScaleDownUnneededTime)
	v.notNegative("scale-down-unready-time", c.ScaleDownUnreadyTime)
	v.notNegative("scale-down-delay-after-add", c.ScaleDownDelayAfterAdd)
	v.notNegative("scale-down-delay-after-delete", c.ScaleDownDelayAfterDelete)
	v.notNegative("scale-down-delay-after-failure", c.ScaleDownDelayAfterFailure)
	v.notNegativeInt("max-scale-down-parallelism", c.MaxScaleDownParallelism)
	v.notNegativeInt("max-drain-parallelism", c.MaxDrainParallelism)
	v.notNegativeInt("max-graceful-termination-sec", c.MaxGracefulTerminationSec)
	v.positive("max-pod-eviction-time", c.MaxPodEvictionTime)
	v.positive("max-cloud-provider-node-deletion-time", c.MaxCloudProviderNodeDeletionTime)
	v.notNegativeInt("max-bulk-soft-taint-count", c.MaxBulkSoftTaintCount)
	v.notNegative("blocking-system-pod-distruption-timeout", c.BlockingSystemPodDisruptionTimeout)
	v.notNegativeInt("min-replica-count", c.MinReplicaCount)
}

func (c *ClusterAutoscalerConfig) validateOperation(v *flagErrors) {
	if c.LeaderElectResourceNamespace != "" {
		v.dnsLabel("leader-elect-resource-namespace", c.LeaderElectResourceNamespace)
	}
	v.dnsSubdomain("leader-elect-resource-name", c.LeaderElectResourceName)
	v.dnsSubdomain("status-config-map-name", c.StatusConfigMapName)
	if c.LeaderElect {
		// client-go's leader elector refuses these at start; say which flag.
		v.positive("leader-elect-retry-period", c.LeaderElectRetryPeriod)
		if c.LeaderElectLeaseDuration <= c.LeaderElectRenewDeadline {
			v.add("leader-elect-lease-duration", "must be longer than --leader-elect-renew-deadline (%s), got %s", c.LeaderElectRenewDeadline, c.LeaderElectLeaseDuration)
		}
		if float64(c.LeaderElectRenewDeadline) <= leaderElectionJitter*float64(c.LeaderElectRetryPeriod) {
			v.add("leader-elect-renew-deadline", "must be longer than %.1f x --leader-elect-retry-period (%s), got %s", leaderElectionJitter, c.LeaderElectRetryPeriod, c.LeaderElectRenewDeadline)
		}
	}
	if _, port, err := net.SplitHostPort(c.Address); err != nil {
		v.add("address", "want [host]:port, got %q", c.Address)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add("address", "port must be a number from 0 to 65535, got %q", c.Address)
	}
	if c.Verbosity < 0 {
		v.add("v", "must not be negative, got %d", c.Verbosity)
	}
	switch strings.ToUpper(c.StderrThreshold) {
	case "INFO", "WARNING", "ERROR", "FATAL", "0", "1", "2", "3":
	default:
		v.add("stderrthreshold", "want INFO, WARNING, ERROR or FATAL, got %q", c.StderrThreshold)
	}
}

// validateExpander checks names only: the priority ConfigMap is read by the
// running autoscaler, not at flag time.
func validateExpander(spec string) error {
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if contains(expanderNames(), name) {
			continue
		}
		err := fmt.Errorf("--expander: unknown expander %q (known: %s)", name, joinNames(expanderNames()))
		if name != spec {
			err = fmt.Errorf("%w, in %q", err, spec)
		}
		return err
	}
	return nil
}

func expanderNames() []string { return expander.Names }

// parseNodes parses --nodes values: min:max:name, 0 <= min <= max, each
// name once.
func parseNodes(values []string) ([]NodeGroupSpec, error) {
	var out []NodeGroupSpec
	seen := map[string]bool{}
	for _, value := range values {
		parts := strings.SplitN(value, ":", 3)
		bad := func(why string) error {
			return fmt.Errorf("--nodes: want min:max:name, got %q (%s)", value, why)
		}
		if len(parts) != 3 || parts[2] == "" {
			return nil, bad("three parts, the name not empty")
		}
		lo, err1 := strconv.Atoi(parts[0])
		hi, err2 := strconv.Atoi(parts[1])
		switch {
		case err1 != nil || err2 != nil:
			return nil, bad("min and max must be whole numbers")
		case lo < 0:
			return nil, bad("min must not be negative")
		case lo > hi:
			return nil, bad(fmt.Sprintf("min %d is above max %d", lo, hi))
		case seen[parts[2]]:
			return nil, bad(fmt.Sprintf("node group %s is given twice", parts[2]))
		}
		seen[parts[2]] = true
		out = append(out, NodeGroupSpec{Min: lo, Max: hi, Name: parts[2]})
	}
	return out, nil
}

// parseAutoDiscovery parses --node-group-auto-discovery values; the kind
// must belong to the cloud provider.
func parseAutoDiscovery(values []string, provider string) ([]AutoDiscoverySpec, error) {
	const want = "want asg:tag=<key>[=<value>],... (aws) or mig:namePrefix=<prefix>,min=<n>,max=<n> (gce)"
	var out []AutoDiscoverySpec
	for _, value := range values {
		kind, params, ok := strings.Cut(value, ":")
		if !ok || params == "" {
			return nil, fmt.Errorf("--node-group-auto-discovery: %s, got %q", want, value)
		}
		var spec AutoDiscoverySpec
		var err error
		switch kind {
		case "asg":
			spec, err = parseASGDiscovery(params)
		case "mig":
			spec, err = parseMIGDiscovery(params)
		default:
			err = fmt.Errorf("unknown discoverer %q", kind)
		}
		if err != nil {
			return nil, fmt.Errorf("--node-group-auto-discovery: %s, got %q: %v", want, value, err)
		}
		if p := map[string]string{"asg": "aws", "mig": "gce"}[kind]; p != provider {
			return nil, fmt.Errorf("--node-group-auto-discovery: %s discovery needs --cloud-provider=%s, not %s, got %q", kind, p, provider, value)
		}
		out = append(out, spec)
	}
	return out, nil
}

// parseASGDiscovery reads "tag=k1,k2=v2,...": the first key comes after
// "tag=", the rest are listed after commas, as upstream writes them.
func parseASGDiscovery(params string) (AutoDiscoverySpec, error) {
	rest, ok := strings.CutPrefix(params, "tag=")
	if !ok || rest == "" {
		return AutoDiscoverySpec{}, errors.New("asg discovery starts with tag=")
	}
	spec := AutoDiscoverySpec{Kind: "asg", Tags: map[string]string{}}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return spec, fmt.Errorf("empty tag key in %q", kv)
		}
		spec.Tags[k] = v
	}
	return spec, nil
}

// parseMIGDiscovery reads "namePrefix=p,min=n,max=m"; all three are required.
func parseMIGDiscovery(params string) (AutoDiscoverySpec, error) {
	spec := AutoDiscoverySpec{Kind: "mig"}
	got := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "namePrefix":
			spec.NamePrefix = v
		case "min":
			spec.MinSize, err = strconv.Atoi(v)
		case "max":
			spec.MaxSize, err = strconv.Atoi(v)
		default:
			return spec, fmt.Errorf("unknown key %q", k)
		}
		if err != nil || v == "" {
			return spec, fmt.Errorf("bad %s %q", k, v)
		}
		got[k] = true
	}
	switch {
	case !got["namePrefix"] || !got["min"] || !got["max"]:
		return spec, errors.New("namePrefix, min and max are all required")
	case spec.MinSize < 0 || spec.MaxSize < spec.MinSize:
		return spec, fmt.Errorf("want 0 <= min <= max, got min %d, max %d", spec.MinSize, spec.MaxSize)
	}
	return spec, nil
}
