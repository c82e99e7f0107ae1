package autoscalerflags

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/expander"
)

// Validate reports every bad value at once, each message starting with the
// flag's name and ending with the value given.
func (f *Flags) Validate() error {
	v := &problems{}
	if err := f.applyProfile(); err != nil {
		v.errs = append(v.errs, err)
	}
	for _, c := range f.checks {
		if err := c.check(); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	d := &f.Decision
	o := &d.Autoscaler
	up, down, cs := &o.ScaleUp, &o.ScaleDown, &o.ClusterState
	v.positive("scan-interval", d.ScanInterval)
	if err := validateExpander(up.Expander); err != nil {
		v.errs = append(v.errs, err)
	}
	v.notNegativeInt("max-nodes-total", o.Limits.MaxNodesTotal)
	if up.MaxNodesPerScaleUp <= 0 {
		v.add("max-nodes-per-scaleup", "must be positive, got %d", up.MaxNodesPerScaleUp)
	}
	v.positive("max-node-provision-time", cs.MaxNodeProvisionTime)
	v.positive("max-node-startup-time", cs.MaxNodeStartupTime)
	v.positive("unregistered-node-removal-time", cs.UnregisteredNodeRemovalTime)
	v.positive("initial-node-group-backoff-duration", cs.Backoff.Initial)
	if cs.Backoff.Max < cs.Backoff.Initial {
		v.add("max-node-group-backoff-duration", "must not be below --initial-node-group-backoff-duration (%s), got %s", cs.Backoff.Initial, cs.Backoff.Max)
	}
	v.positive("node-group-backoff-reset-timeout", cs.Backoff.Reset)
	for _, l := range up.BalancingIgnoreLabels {
		v.labelKey("balancing-ignore-label", l)
	}
	for _, k := range cs.Readiness.StartupTaints {
		v.labelKey("startup-taint", k)
	}
	for _, k := range cs.Readiness.StatusTaints {
		v.labelKey("status-taint", k)
	}
	for _, p := range cs.Readiness.StartupTaintPrefixes {
		if p == "" {
			v.add("startup-taint-prefix", "must not be empty, got %q", p)
		}
	}
	v.notNegative("new-pod-scale-up-delay", up.NewPodScaleUpDelay)
	if err := o.Pending.Validate(); err != nil {
		v.errs = append(v.errs, err)
	}
	v.notNegativeInt("ok-total-unready-count", o.OkTotalUnreadyCount)
	if p := o.MaxTotalUnreadyPercentage; !(p >= 0 && p <= 100) {
		v.add("max-total-unready-percentage", "must be from 0 to 100, got %s", strconv.FormatFloat(p, 'g', -1, 64))
	}
	v.fraction("scale-down-utilization-threshold", down.UtilizationThreshold)
	v.fraction("scale-down-gpu-utilization-threshold", down.GPUUtilizationThreshold)
	v.notNegative("scale-down-unneeded-time", down.UnneededTime)
	v.notNegative("scale-down-unready-time", down.UnreadyTime)
	v.notNegative("scale-down-delay-after-add", down.DelayAfterAdd)
	v.notNegative("scale-down-delay-after-delete", down.DelayAfterDelete)
	v.notNegative("scale-down-delay-after-failure", down.DelayAfterFailure)
	v.notNegativeInt("max-scale-down-parallelism", down.MaxScaleDownParallelism)
	v.notNegativeInt("max-drain-parallelism", down.MaxDrainParallelism)
	v.notNegativeInt("max-graceful-termination-sec", down.MaxGracefulTerminationSec)
	v.positive("max-cloud-provider-node-deletion-time", down.MaxCloudProviderNodeDeletionTime)
	v.notNegativeInt("max-bulk-soft-taint-count", down.MaxBulkSoftTaintCount)
	v.notNegative("blocking-system-pod-distruption-timeout", down.BlockingSystemPodDisruptionTimeout)
	v.notNegativeInt("min-replica-count", down.MinReplicaCount)
	c := &o.Consolidation
	v.notNegative("consolidation-stable-time", c.StableTime)
	if !(c.MinSavings >= 0 && c.MinSavings < 1) {
		v.add("consolidation-min-savings", "must be at least 0 and below 1, got %s", strconv.FormatFloat(c.MinSavings, 'g', -1, 64))
	}
	if !(c.MinSavingsPerPod >= 0 && c.MinSavingsPerPod <= consolidation.MaxSavingsPerPod) {
		v.add("consolidation-min-savings-per-pod", "must be at least 0 and at most %d, got %s",
			consolidation.MaxSavingsPerPod, strconv.FormatFloat(c.MinSavingsPerPod, 'g', -1, 64))
	}
	if c.MaxBatch < 1 {
		v.add("consolidation-max-batch", "must be at least 1, got %d", c.MaxBatch)
	}
	v.validateRepair(o.Repair)
	v.interruption(o.Interruption)
	v.forecast(o.Forecast)
	return errors.Join(v.errs...)
}

// validateExpander checks names only: the priority ConfigMap is read by the
// running autoscaler, not at flag time.
func validateExpander(spec string) error {
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if contains(expander.Names(), name) {
			continue
		}
		err := fmt.Errorf("--expander: unknown expander %q (known: %s)", name, strings.Join(expander.Names(), ", "))
		if name != spec {
			err = fmt.Errorf("%w, in %q", err, spec)
		}
		return err
	}
	return nil
}

// problems collects messages of the form "--flag: rule, got value".
type problems struct{ errs []error }

func (v *problems) add(flag, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

func (v *problems) positive(flag string, d time.Duration) {
	if d <= 0 {
		v.add(flag, "must be positive, got %s", d)
	}
}

func (v *problems) notNegative(flag string, d time.Duration) {
	if d < 0 {
		v.add(flag, "must not be negative, got %s", d)
	}
}

func (v *problems) notNegativeInt(flag string, n int) {
	if n < 0 {
		v.add(flag, "must not be negative, got %d", n)
	}
}

// fraction accepts (0, 1]: a threshold of 0 would make no node a candidate,
// which --scale-down-enabled=false says more plainly.
func (v *problems) fraction(flag string, f float64) {
	if !(f > 0 && f <= 1) { // also catches NaN
		v.add(flag, "must be in (0, 1], got %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
}

func (v *problems) labelKey(flag, key string) {
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		v.add(flag, "not a label or taint key (%s), got %q", strings.Join(msgs, ", "), key)
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

func joinErrors(errs []error) error { return errors.Join(errs...) }
