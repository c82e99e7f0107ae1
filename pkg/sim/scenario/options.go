package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// AutoscalerFlags are the node autoscaler options a scenario may set, named
// as the upstream Cluster Autoscaler flags (and `gpuscale cluster-autoscaler`).
type AutoscalerFlags struct {
	ScanInterval                     *metav1.Duration `json:"scan-interval,omitempty"`
	Expander                         *string          `json:"expander,omitempty"`
	BalanceSimilarNodeGroups         *bool            `json:"balance-similar-node-groups,omitempty"`
	MaxNodesTotal                    *int             `json:"max-nodes-total,omitempty"`
	MaxNodesPerScaleUp               *int             `json:"max-nodes-per-scaleup,omitempty"`
	NewPodScaleUpDelay               *metav1.Duration `json:"new-pod-scale-up-delay,omitempty"`
	MaxNodeProvisionTime             *metav1.Duration `json:"max-node-provision-time,omitempty"`
	MaxNodeStartupTime               *metav1.Duration `json:"max-node-startup-time,omitempty"`
	ScaleDownEnabled                 *bool            `json:"scale-down-enabled,omitempty"`
	ScaleDownUtilizationThreshold    *float64         `json:"scale-down-utilization-threshold,omitempty"`
	ScaleDownGPUUtilizationThreshold *float64         `json:"scale-down-gpu-utilization-threshold,omitempty"`
	ScaleDownUnneededTime            *metav1.Duration `json:"scale-down-unneeded-time,omitempty"`
	ScaleDownUnreadyTime             *metav1.Duration `json:"scale-down-unready-time,omitempty"`
	ScaleDownDelayAfterAdd           *metav1.Duration `json:"scale-down-delay-after-add,omitempty"`
	ScaleDownDelayAfterDelete        *metav1.Duration `json:"scale-down-delay-after-delete,omitempty"`
	ScaleDownDelayAfterFailure       *metav1.Duration `json:"scale-down-delay-after-failure,omitempty"`
	MaxScaleDownParallelism          *int             `json:"max-scale-down-parallelism,omitempty"`
	MaxDrainParallelism              *int             `json:"max-drain-parallelism,omitempty"`
	ScaleDownNonEmptyCandidatesCount *int             `json:"scale-down-non-empty-candidates-count,omitempty"`
}

// DefaultScanInterval is --scan-interval's upstream default.
const DefaultScanInterval = 10 * time.Second

// Options returns the decision core's options: the upstream defaults with
// the flags that are set applied, the scenario seed feeding the expanders,
// and the scan interval.
func (f AutoscalerFlags) Options(seed int64) (autoscaler.Options, time.Duration) {
	o := autoscaler.DefaultOptions()
	o.ScaleUp.Seed = seed
	scan := DefaultScanInterval
	setD := func(dst *time.Duration, src *metav1.Duration) {
		if src != nil {
			*dst = src.Duration
		}
	}
	setD(&scan, f.ScanInterval)
	if f.Expander != nil {
		o.ScaleUp.Expander = *f.Expander
	}
	if f.BalanceSimilarNodeGroups != nil {
		o.ScaleUp.BalanceSimilarNodeGroups = *f.BalanceSimilarNodeGroups
	}
	if f.MaxNodesTotal != nil {
		o.Limits.MaxNodesTotal = *f.MaxNodesTotal
	}
	if f.MaxNodesPerScaleUp != nil {
		o.ScaleUp.MaxNodesPerScaleUp = *f.MaxNodesPerScaleUp
	}
	setD(&o.ScaleUp.NewPodScaleUpDelay, f.NewPodScaleUpDelay)
	setD(&o.ClusterState.MaxNodeProvisionTime, f.MaxNodeProvisionTime)
	setD(&o.ClusterState.MaxNodeStartupTime, f.MaxNodeStartupTime)
	if f.ScaleDownEnabled != nil {
		o.ScaleDownEnabled = *f.ScaleDownEnabled
	}
	d := &o.ScaleDown
	if f.ScaleDownUtilizationThreshold != nil {
		d.UtilizationThreshold = *f.ScaleDownUtilizationThreshold
	}
	if f.ScaleDownGPUUtilizationThreshold != nil {
		d.GPUUtilizationThreshold = *f.ScaleDownGPUUtilizationThreshold
	}
	setD(&d.UnneededTime, f.ScaleDownUnneededTime)
	setD(&d.UnreadyTime, f.ScaleDownUnreadyTime)
	setD(&d.DelayAfterAdd, f.ScaleDownDelayAfterAdd)
	setD(&d.DelayAfterDelete, f.ScaleDownDelayAfterDelete)
	setD(&d.DelayAfterFailure, f.ScaleDownDelayAfterFailure)
	for _, p := range []struct {
		dst *int
		src *int
	}{{&d.MaxScaleDownParallelism, f.MaxScaleDownParallelism}, {&d.MaxDrainParallelism, f.MaxDrainParallelism},
		{&d.NonEmptyCandidatesCount, f.ScaleDownNonEmptyCandidatesCount}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return o, scan
}

// Merge returns f with every flag set in over replacing f's.
func (f AutoscalerFlags) Merge(over AutoscalerFlags) AutoscalerFlags {
	base, _ := json.Marshal(f)
	top, _ := json.Marshal(over)
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(base, &m)
	_ = json.Unmarshal(top, &m)
	data, _ := json.Marshal(m)
	var out AutoscalerFlags
	_ = json.Unmarshal(data, &out)
	return out
}

// ParseFlagSet reads "name=value,name=value" (flag names with or without
// their leading dashes, e.g. "expander=price,scale-down-unneeded-time=5m"),
// as --compare takes them. Unknown flags are an error naming them.
func ParseFlagSet(s string) (AutoscalerFlags, error) {
	var f AutoscalerFlags
	var lines []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("option set %q: %q is not name=value", s, part)
		}
		lines = append(lines, fmt.Sprintf("%s: %s", strings.TrimLeft(strings.TrimSpace(k), "-"), quoteIfString(v)))
	}
	sort.Strings(lines)
	if err := yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &f); err != nil {
		return f, fmt.Errorf("option set %q: %w", s, err)
	}
	return f, nil
}

// quoteIfString keeps numbers and booleans as they are and quotes the rest,
// so "5m" and "least-waste" decode as strings.
func quoteIfString(v string) string {
	v = strings.TrimSpace(v)
	var x any
	if err := json.Unmarshal([]byte(v), &x); err == nil {
		switch x.(type) {
		case float64, bool:
			return v
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Label is a short name for an option set: its flags as name=value.
func (f AutoscalerFlags) Label() string {
	data, _ := json.Marshal(f)
	m := map[string]any{}
	_ = json.Unmarshal(data, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, ",")
}
