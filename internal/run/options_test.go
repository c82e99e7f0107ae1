package run

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/limits"
)

// parse defines the flags on a fresh set and parses args; validation is
// left to the test.
func parse(t *testing.T, args ...string) *ClusterAutoscalerOptions {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o := NewClusterAutoscalerOptions()
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return o
}

// valid parses and validates.
func valid(t *testing.T, args ...string) *ClusterAutoscalerOptions {
	t.Helper()
	o := parse(t, args...)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestDefaultsAreTheCoreDefaults(t *testing.T) {
	o := valid(t)
	if got, want := o.Decision.Decision.Autoscaler, autoscaler.DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("default flags map to\n  %+v\nwant autoscaler.DefaultOptions()\n  %+v", got, want)
	}
	if o.Decision.Decision.ScanInterval != 10*time.Second {
		t.Errorf("scan interval %s", o.Decision.Decision.ScanInterval)
	}
}

func TestShellDefaults(t *testing.T) {
	s := valid(t).Shell
	want := ShellOptions{
		CloudProvider: "gce", Namespace: "kube-system", MaxPodEvictionTime: 2 * time.Minute, Address: ":8085",
		KubeClientQPS: 5, KubeClientBurst: 10, // upstream's defaults
		LeaderElection: controller.LeaderElection{Enabled: true, Namespace: "kube-system", Name: "cluster-autoscaler",
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Liveness:            controller.Liveness{MaxInactivity: 10 * time.Minute, MaxFailingTime: 15 * time.Minute, MaxStartupTime: 20 * time.Minute},
		StatusConfigMapName: "cluster-autoscaler-status", WriteStatusConfigMap: true, LogToStderr: true, StderrThreshold: "INFO",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("shell defaults\n  %+v\nwant\n  %+v", s, want)
	}
}

func TestFlagsMapOntoOptions(t *testing.T) {
	o := valid(t,
		"--expander=priority,least-waste", "--seed=7", "--max-nodes-total=50", "--cores-total=2:100",
		"--memory-total=4:400", "--gpu-total=nvidia-a10g:0:8", "--gpu-total=nvidia-tesla-a100:1:4",
		"--max-nodes-per-scaleup=20", "--max-node-provision-time=5m", "--max-node-startup-time=7m",
		"--initial-node-group-backoff-duration=1m", "--max-node-group-backoff-duration=10m", "--node-group-backoff-reset-timeout=1h",
		"--balance-similar-node-groups", "--balancing-ignore-label=a.io/x", "--balancing-ignore-label=b.io/y",
		"--expendable-pods-priority-cutoff=-5", "--new-pod-scale-up-delay=3s",
		"--scale-down-enabled=false", "--scale-down-utilization-threshold=0.3", "--scale-down-gpu-utilization-threshold=0.9",
		"--scale-down-unneeded-time=1m", "--scale-down-unready-time=2m", "--scale-down-unready-enabled=false",
		"--scale-down-delay-after-add=3m", "--scale-down-delay-after-delete=4m", "--scale-down-delay-after-failure=5m",
		"--max-scale-down-parallelism=3", "--max-drain-parallelism=2", "--scale-down-non-empty-candidates-count=9",
		"--skip-nodes-with-local-storage=false", "--skip-nodes-with-system-pods=false", "--skip-nodes-with-custom-controller-pods=false",
		"--max-graceful-termination-sec=60", "--ignore-daemonsets-utilization", "--ignore-mirror-pods-utilization",
		"--daemonset-eviction-for-empty-nodes", "--daemonset-eviction-for-occupied-nodes=false",
		"--max-cloud-provider-node-deletion-time=6m", "--max-bulk-soft-taint-count=4",
		"--ok-total-unready-count=7", "--max-total-unready-percentage=30", "--unregistered-node-removal-time=20m",
		"--force-delete-unregistered-nodes", "--startup-taint=node.cilium.io/agent-not-ready", "--ignore-taint=x.io/legacy",
		"--startup-taint-prefix=gpu.example.com/", "--status-taint=x.io/degraded",
	).Decision.Decision.Autoscaler
	// autoscaler.New copies the limits and the cutoff into both halves; the
	// priority expander needs its ConfigMap, read at start.
	o.ScaleUp.Priorities, _ = expander.ParsePriorities("10:\n  - .*\n")
	a, err := autoscaler.New(o)
	if err != nil {
		t.Fatal(err)
	}
	o = a.Options()
	up, down, cs := o.ScaleUp, o.ScaleDown, o.ClusterState
	wantLimits := limits.Limits{MaxNodesTotal: 50, Cores: limits.Range{Min: 2, Max: 100}, MemoryGiB: limits.Range{Min: 4, Max: 400},
		GPUs: map[string]limits.Range{"nvidia-a10g": {Min: 0, Max: 8}, "nvidia-tesla-a100": {Min: 1, Max: 4}}}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"Expander", up.Expander, "priority,least-waste"},
		{"Seed", up.Seed, int64(7)},
		{"Limits", o.Limits, wantLimits},
		{"ScaleUp.Limits", up.Limits, wantLimits},
		{"ScaleDown.Limits", down.Limits, wantLimits},
		{"MaxNodesPerScaleUp", up.MaxNodesPerScaleUp, 20},
		{"MaxNodeProvisionTime", cs.MaxNodeProvisionTime, 5 * time.Minute},
		{"MaxNodeStartupTime", cs.MaxNodeStartupTime, 7 * time.Minute},
		{"Backoff", [3]time.Duration{cs.Backoff.Initial, cs.Backoff.Max, cs.Backoff.Reset}, [3]time.Duration{time.Minute, 10 * time.Minute, time.Hour}},
		{"BalanceSimilarNodeGroups", up.BalanceSimilarNodeGroups, true},
		{"BalancingIgnoreLabels", up.BalancingIgnoreLabels, []string{"a.io/x", "b.io/y"}},
		{"ExpendablePodsPriorityCutoff", o.ExpendablePodsPriorityCutoff, int32(-5)},
		{"ScaleDown.ExpendablePodsPriorityCutoff", down.ExpendablePodsPriorityCutoff, int32(-5)},
		{"NewPodScaleUpDelay", up.NewPodScaleUpDelay, 3 * time.Second},
		{"ScaleDownEnabled", o.ScaleDownEnabled, false},
		{"UtilizationThreshold", down.UtilizationThreshold, 0.3},
		{"GPUUtilizationThreshold", down.GPUUtilizationThreshold, 0.9},
		{"UnneededTime", down.UnneededTime, time.Minute},
		{"UnreadyTime", down.UnreadyTime, 2 * time.Minute},
		{"UnreadyEnabled", down.UnreadyEnabled, false},
		{"DelayAfterAdd", down.DelayAfterAdd, 3 * time.Minute},
		{"DelayAfterDelete", down.DelayAfterDelete, 4 * time.Minute},
		{"DelayAfterFailure", down.DelayAfterFailure, 5 * time.Minute},
		{"MaxScaleDownParallelism", down.MaxScaleDownParallelism, 3},
		{"MaxDrainParallelism", down.MaxDrainParallelism, 2},
		{"NonEmptyCandidatesCount", down.NonEmptyCandidatesCount, 9},
		{"SkipNodesWithLocalStorage", down.SkipNodesWithLocalStorage, false},
		{"SkipNodesWithSystemPods", down.SkipNodesWithSystemPods, false},
		{"SkipNodesWithCustomControllerPods", down.SkipNodesWithCustomControllerPods, false},
		{"MaxGracefulTerminationSec", down.MaxGracefulTerminationSec, 60},
		{"IgnoreDaemonSetsUtilization", down.IgnoreDaemonSetsUtilization, true},
		{"IgnoreMirrorPodsUtilization", down.IgnoreMirrorPodsUtilization, true},
		{"DaemonSetEvictionForEmptyNodes", down.DaemonSetEvictionForEmptyNodes, true},
		{"DaemonSetEvictionForOccupiedNodes", down.DaemonSetEvictionForOccupiedNodes, false},
		{"MaxCloudProviderNodeDeletionTime", down.MaxCloudProviderNodeDeletionTime, 6 * time.Minute},
		{"MaxBulkSoftTaintCount", down.MaxBulkSoftTaintCount, 4},
		{"OkTotalUnreadyCount", o.OkTotalUnreadyCount, 7},
		{"MaxTotalUnreadyPercentage", o.MaxTotalUnreadyPercentage, 30.0},
		{"UnregisteredNodeRemovalTime", cs.UnregisteredNodeRemovalTime, 20 * time.Minute},
		{"ForceDeleteUnregisteredNodes", cs.ForceDeleteUnregisteredNodes, true},
		{"StartupTaints", cs.Readiness.StartupTaints, []string{"node.cilium.io/agent-not-ready", "x.io/legacy"}},
		{"StartupTaintPrefixes", cs.Readiness.StartupTaintPrefixes, []string{"gpu.example.com/"}},
		{"StatusTaints", cs.Readiness.StatusTaints, []string{"x.io/degraded"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if err := down.Validate(); err != nil {
		t.Errorf("mapped scale-down options do not validate: %v", err)
	}
}

func TestShellMapping(t *testing.T) {
	o := valid(t,
		"--kubeconfig=/k", "--cloud-provider=aws", "--cloud-config=/c", "--namespace=autoscaling",
		"--nodes=1:10:gpu-pool", "--nodes=0:3:https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/ig",
		"--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod,team=ml",
		"--scan-interval=30s", "--max-pod-eviction-time=1m", "--address=127.0.0.1:9000", "--leader-elect=false",
		"--leader-elect-resource-name=ca-shard-1", "--status-config-map-name=status-1", "--write-status-configmap=false", "--v=4",
		"--max-inactivity=1m", "--max-failing-time=2m", "--max-startup-time=30s",
		"--kube-client-qps=50.5", "--kube-client-burst=100",
	)
	s := o.Shell
	if s.KubeClientQPS != 50.5 || s.KubeClientBurst != 100 {
		t.Errorf("client rate %v qps, burst %d", s.KubeClientQPS, s.KubeClientBurst)
	}
	if peers := valid(t, "--status-config-map-name=status-a", "--shard-peer-status-config-map=status-b",
		"--shard-peer-status-config-map=status-c").Shell.ShardPeers; !reflect.DeepEqual(peers, []string{"status-b", "status-c"}) {
		t.Errorf("shard peers = %v", peers)
	}
	wantGroups := []NodeGroupSpec{{1, 10, "gpu-pool"}, {0, 3, "https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/ig"}}
	if o.Decision.Decision.ScanInterval != 30*time.Second {
		t.Errorf("scan interval %s", o.Decision.Decision.ScanInterval)
	}
	// As upstream, the start-up limit is raised to the larger of the others.
	if l := s.Liveness; l.MaxInactivity != time.Minute || l.MaxFailingTime != 2*time.Minute || l.MaxStartupTime != 2*time.Minute {
		t.Errorf("liveness %+v", l)
	}
	if !reflect.DeepEqual(s.NodeGroups, wantGroups) {
		t.Errorf("node groups = %+v", s.NodeGroups)
	}
	wantTags := map[string]string{"k8s.io/cluster-autoscaler/enabled": "", "k8s.io/cluster-autoscaler/prod": "", "team": "ml"}
	if len(s.AutoDiscovery) != 1 || s.AutoDiscovery[0].Kind != "asg" || !reflect.DeepEqual(s.AutoDiscovery[0].Tags, wantTags) {
		t.Errorf("auto-discovery = %+v", s.AutoDiscovery)
	}
	if s.Kubeconfig != "/k" || s.CloudProvider != "aws" || s.CloudConfig != "/c" || s.Namespace != "autoscaling" ||
		s.MaxPodEvictionTime != time.Minute || s.Address != "127.0.0.1:9000" ||
		s.StatusConfigMapName != "status-1" || s.WriteStatusConfigMap || s.Verbosity != 4 {
		t.Errorf("shell = %+v", s)
	}
	le := s.LeaderElection
	if le.Enabled || le.Name != "ca-shard-1" || le.Namespace != "autoscaling" {
		t.Errorf("leader election = %+v; the lease namespace should follow --namespace", le)
	}
	for _, q := range []string{"gpuscale-interruptions", "events.fifo", "https://sqs.us-east-1.amazonaws.com/123456789012/gpuscale-interruptions"} {
		if got := valid(t, "--cloud-provider=aws", "--aws-interruption-queue="+q).Shell.AWSInterruptionQueue; got != q {
			t.Errorf("--aws-interruption-queue=%s gives %q", q, got)
		}
	}
	s = valid(t, "--cloud-provider=gce", "--node-group-auto-discovery=mig:namePrefix=gpu-,min=0,max=8",
		"--leader-elect-resource-namespace=leases").Shell
	if d := s.AutoDiscovery[0]; d.Kind != "mig" || d.NamePrefix != "gpu-" || d.MinSize != 0 || d.MaxSize != 8 {
		t.Errorf("mig discovery = %+v", d)
	}
	if s.LeaderElection.Namespace != "leases" {
		t.Errorf("lease namespace = %s", s.LeaderElection.Namespace)
	}
}

func TestBadValuesNameTheFlagAndTheValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scale-down-utilization-threshold=1.5"}, `--scale-down-utilization-threshold: must be in (0, 1], got 1.5`},
		{[]string{"--scale-down-utilization-threshold=0"}, `--scale-down-utilization-threshold: must be in (0, 1], got 0`},
		{[]string{"--scale-down-gpu-utilization-threshold=NaN"}, `--scale-down-gpu-utilization-threshold: must be in (0, 1], got NaN`},
		{[]string{"--expander=cheapest"}, `--expander: unknown expander "cheapest"`},
		{[]string{"--expander=priority,cheapest"}, `--expander: unknown expander "cheapest" (known: random, most-pods, least-waste, least-nodes, price, priority), in "priority,cheapest"`},
		{[]string{"--nodes=3:1:pool"}, `--nodes: want min:max:name, got "3:1:pool" (min 3 is above max 1)`},
		{[]string{"--nodes=1:pool"}, `--nodes: want min:max:name, got "1:pool"`},
		{[]string{"--nodes=a:2:pool"}, `--nodes: want min:max:name, got "a:2:pool" (min "a" must be a whole number written in digits)`},
		{[]string{"--nodes=0:1e20:pool"}, `--nodes: want min:max:name, got "0:1e20:pool" (max "1e20" must be a whole number written in digits)`},
		{[]string{"--nodes=0:100000000000000000000:pool"}, `(max 100000000000000000000 is above the largest node group size, 2147483647)`},
		{[]string{"--nodes=0:3000000000:pool"}, `(max 3000000000 is above the largest node group size, 2147483647)`},
		{[]string{"--nodes=-1:2:pool"}, `--nodes: want min:max:name, got "-1:2:pool" (min must not be negative)`},
		{[]string{"--nodes=1:2:pool", "--nodes=1:3:pool"}, `--nodes: want min:max:name, got "1:3:pool" (node group pool is given twice)`},
		{[]string{"--cloud-provider=azure"}, `--cloud-provider: unknown provider "azure" (known: aws, gce, kwok)`},
		{[]string{"--cloud-provider=kwok", "--aws-interruption-queue=q"}, `--aws-interruption-queue: needs --cloud-provider=aws, not kwok, got "q"`},
		{[]string{"--kube-client-qps=0"}, `--kube-client-qps: must be a number above 0, got 0`},
		{[]string{"--kube-client-qps=NaN"}, `--kube-client-qps: must be a number above 0, got NaN`},
		{[]string{"--kube-client-burst=0"}, `--kube-client-burst: must be at least 1, got 0`},
		{[]string{"--cloud-provider=aws", "--aws-interruption-queue=my queue"}, `--aws-interruption-queue: want a queue name (1 to 80 letters, digits, - and _) or its URL, got "my queue"`},
		{[]string{"--cloud-provider=aws", "--aws-interruption-queue=https://sqs.us-east-1.amazonaws.com"}, `--aws-interruption-queue: want a queue name or its URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got "https://sqs.us-east-1.amazonaws.com"`},
		{[]string{"--cloud-provider=kwok", "--node-group-auto-discovery=asg:tag=a"}, `--node-group-auto-discovery: asg discovery needs --cloud-provider=aws, not kwok, got "asg:tag=a"`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=asg:k=v"}, `--node-group-auto-discovery: want asg:tag=`},
		{[]string{"--cloud-provider=gce", "--node-group-auto-discovery=mig:namePrefix=a,min=3,max=1"}, `got "mig:namePrefix=a,min=3,max=1": want 0 <= min <= max`},
		{[]string{"--cloud-provider=gce", "--node-group-auto-discovery=mig:namePrefix=a"}, `namePrefix, min and max are all required`},
		{[]string{"--node-group-auto-discovery=vmss:tag=a"}, `unknown discoverer "vmss"`},
		{[]string{"--cores-total=10"}, `--cores-total: want min:max, got "10"`},
		{[]string{"--memory-total=9:1"}, `--memory-total: want 0 <= min <= max, got "9:1"`},
		{[]string{"--gpu-total=a100:1"}, `--gpu-total: want type:min:max, got "a100:1"`},
		{[]string{"--gpu-total=a100:0:1", "--gpu-total=a100:0:2"}, `--gpu-total: GPU type "a100" given twice, got "a100:0:2"`},
		{[]string{"--max-nodes-total=-1"}, `--max-nodes-total: must not be negative, got -1`},
		{[]string{"--max-nodes-per-scaleup=0"}, `--max-nodes-per-scaleup: must be positive, got 0`},
		{[]string{"--scan-interval=0s"}, `--scan-interval: must be positive, got 0s`},
		{[]string{"--max-node-provision-time=-1m"}, `--max-node-provision-time: must be positive, got -1m0s`},
		{[]string{"--max-node-group-backoff-duration=1m"}, `--max-node-group-backoff-duration: must not be below --initial-node-group-backoff-duration (5m0s), got 1m0s`},
		{[]string{"--scale-down-unneeded-time=-1s"}, `--scale-down-unneeded-time: must not be negative, got -1s`},
		{[]string{"--max-drain-parallelism=-2"}, `--max-drain-parallelism: must not be negative, got -2`},
		{[]string{"--max-graceful-termination-sec=-1"}, `--max-graceful-termination-sec: must not be negative, got -1`},
		{[]string{"--expendable-pods-priority-cutoff=3000000000"}, `--expendable-pods-priority-cutoff: must fit a pod priority (int32), got 3000000000`},
		{[]string{"--balancing-ignore-label=bad label"}, `--balancing-ignore-label: not a label or taint key`},
		{[]string{"--startup-taint=bad key!"}, `--startup-taint: not a label or taint key`},
		{[]string{"--ok-total-unready-count=-1"}, `--ok-total-unready-count: must not be negative, got -1`},
		{[]string{"--max-total-unready-percentage=120"}, `--max-total-unready-percentage: must be from 0 to 100, got 120`},
		{[]string{"--max-failing-time=0s"}, `--max-failing-time: must be positive, got 0s`},
		{[]string{"--namespace=Kube_System"}, `--namespace: not a namespace name`},
		{[]string{"--status-config-map-name=Status!"}, `--status-config-map-name: not an object name`},
		{[]string{"--leader-elect-renew-deadline=20s"}, `--leader-elect-lease-duration: must be longer than --leader-elect-renew-deadline (20s), got 15s`},
		{[]string{"--leader-elect-retry-period=9s"}, `--leader-elect-renew-deadline: must be longer than 1.2 x --leader-elect-retry-period (9s), got 10s`},
		{[]string{"--shard-peer-status-config-map=cluster-autoscaler-status"}, `--shard-peer-status-config-map: names this autoscaler's own --status-config-map-name, got "cluster-autoscaler-status"`},
		{[]string{"--shard-peer-status-config-map=b", "--write-status-configmap=false"}, `--shard-peer-status-config-map: shards publish their claims in their status ConfigMap: needs --write-status-configmap=true, got "b"`},
		{[]string{"--shard-peer-status-config-map=B!"}, `--shard-peer-status-config-map: not an object name`},
		{[]string{"--address=8085"}, `--address: want [host]:port, got "8085"`},
		{[]string{"--address=:http"}, `--address: port must be a number from 0 to 65535, got ":http"`},
		{[]string{"--stderrthreshold=debug"}, `--stderrthreshold: want INFO, WARNING, ERROR or FATAL, got "debug"`},
	} {
		err := parse(t, tc.args...).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v\nwant it to contain %s", tc.args, err, tc.want)
		}
	}
}

func TestLeaderElectionTimingIsNotCheckedWhenDisabled(t *testing.T) {
	if err := parse(t, "--leader-elect=false", "--leader-elect-renew-deadline=1m").Validate(); err != nil {
		t.Error(err)
	}
}

func TestEveryBadValueIsReported(t *testing.T) {
	err := parse(t, "--expander=cheapest", "--scan-interval=0s", "--address=x", "--cores-total=9", "--nodes=x").Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, flag := range []string{"--expander", "--scan-interval", "--address", "--cores-total", "--nodes"} {
		if !strings.Contains(err.Error(), flag+":") {
			t.Errorf("error does not mention %s: %v", flag, err)
		}
	}
}

// The client the autoscaler builds carries --kube-client-qps and
// --kube-client-burst.
func TestClientRateReachesTheClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	s := valid(t, "--kubeconfig="+path, "--kube-client-qps=40", "--kube-client-burst=80").Shell
	c, err := s.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.QPS != 40 || c.Burst != 80 {
		t.Errorf("client rate %v qps, burst %d; want 40 and 80", c.QPS, c.Burst)
	}
	// One action's calls at once: as many as the burst lets through.
	if o := controllerOptions(s, 10*time.Second, autoscaler.DefaultOptions(), nil); o.APIConcurrency != 80 {
		t.Errorf("API calls at once %d, want the burst, 80", o.APIConcurrency)
	}
}
