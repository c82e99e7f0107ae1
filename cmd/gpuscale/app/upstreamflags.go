package app

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

// UnsupportedFlagsDoc is where the upstream flags gpuscale cluster-autoscaler
// does not have are listed, each group with what to do instead.
const UnsupportedFlagsDoc = "https://github.com/gpuscale/gpuscale/blob/main/docs/flags.md#upstream-flags-gpuscale-does-not-have"

// unsupportedUpstreamFlags are the upstream Cluster Autoscaler's flags (the
// parameter table of its FAQ, klog's flags included) that gpuscale
// cluster-autoscaler does not have, sorted. docs/flags.md lists the same
// names; tests keep the two, and the flag set, in step.
const unsupportedUpstreamFlags = `
	add-dir-header allowed-scheduler-names alsologtostderr async-node-groups
	aws-use-static-instance-list balancing-label
	bulk-mig-instances-listing-enabled
	capacity-buffer-pod-dry-run-enabled capacity-quotas-enabled
	check-capacity-batch-processing
	check-capacity-provisioning-request-batch-timebox
	check-capacity-provisioning-request-max-batch-size cloud-provider-gce-l7lb-src-cidrs
	cloud-provider-gce-lb-src-cidrs cluster-name cluster-snapshot-parallelism
	clusterapi-cloud-config-authoritative cordon-node-before-terminating debugging-snapshot-enabled
	drain-priority-config dynamic-node-delete-delay-after-taint-enabled
	enable-csi-node-aware-scheduling enable-dynamic-resource-allocation enable-proactive-scaleup
	enforce-node-group-min-size estimator fastpath-binpacking-enabled
	feature-gates force-delete-failed-nodes force-ds frequent-loops-enabled gce-concurrent-refreshes
	gce-mig-instances-min-refresh-wait-time grpc-expander-cert grpc-expander-url kube-api-content-type
	kubernetes leader-elect-resource-lock log-backtrace-at log-dir
	log-file log-file-max-size log-flush-frequency log-json-info-buffer-size log-json-split-stream
	log-text-info-buffer-size log-text-split-stream logging-format max-allocatable-difference-ratio
	max-binpacking-time max-bulk-soft-taint-time max-free-difference-ratio
	max-node-skip-eval-time-tracker-enabled max-nodegroup-binpacking-duration memory-difference-ratio
	node-delete-delay-after-taint node-deletion-batcher-interval
	node-deletion-candidate-ttl node-deletion-delay-timeout node-info-cache-expire-time
	node-removal-latency-tracking-enabled one-output parallel-scale-up pod-injection-limit
	predicate-parallelism profiling
	provisioning-request-max-backoff-cache-size
	record-duplicated-events regional scale-down-candidates-pool-min-count
	scale-down-candidates-pool-ratio scale-down-delay-type-local scale-down-simulation-timeout
	scale-from-unschedulable scale-up-from-zero scheduler-config-file skip-headers skip-log-headers
	unremovable-node-recheck-timeout user-agent vmodule
`

// UnsupportedUpstreamFlags returns the upstream flag names gpuscale
// cluster-autoscaler refuses, sorted.
func UnsupportedUpstreamFlags() []string {
	out := strings.Fields(unsupportedUpstreamFlags)
	sort.Strings(out)
	return out
}

func isUnsupportedUpstreamFlag(name string) bool {
	names := UnsupportedUpstreamFlags()
	i := sort.SearchStrings(names, name)
	return i < len(names) && names[i] == name
}

// flagError explains an unknown flag of cluster-autoscaler: one the
// upstream Cluster Autoscaler has is named as such, with the list of those
// gpuscale lacks; any other is sent to --help. A decision flag given to
// simulate is sent to --set. Other errors pass unchanged.
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) {
		return err
	}
	name := unknown.GetSpecifiedName()
	if cmd.Name() == "simulate" && unknown.GetSpecifiedShortnames() == "" && autoscalerflags.IsDecisionFlag(name) {
		return fmt.Errorf("%w: a decision flag of cluster-autoscaler, which simulate takes in --set (or --compare): --set %s=VALUE", err, name)
	}
	if cmd.Name() != "cluster-autoscaler" {
		return err
	}
	if unknown.GetSpecifiedShortnames() == "" && isUnsupportedUpstreamFlag(name) {
		return fmt.Errorf("%w: an upstream Cluster Autoscaler flag that gpuscale does not support; "+
			"the flags gpuscale lacks, and what to use instead, are listed at %s", err, UnsupportedFlagsDoc)
	}
	return fmt.Errorf("%w: neither gpuscale's nor the upstream Cluster Autoscaler's; "+
		"`gpuscale cluster-autoscaler --help` lists the flags", err)
}
