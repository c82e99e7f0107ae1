package cloudprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Keys of per-group autoscaling options, named as the upstream Cluster
// Autoscaler names them (the suffixes of its AWS tags
// k8s.io/cluster-autoscaler/node-template/autoscaling-options/<key>, and the
// keys of GCE's autoscaling_options). Values take the form of the flag each
// overrides: a number from 0 to 1, a Go duration, or a boolean.
const (
	OptionScaleDownUtilizationThreshold    = "scaledownutilizationthreshold"
	OptionScaleDownGPUUtilizationThreshold = "scaledowngpuutilizationthreshold"
	OptionScaleDownUnneededTime            = "scaledownunneededtime"
	OptionScaleDownUnreadyTime             = "scaledownunreadytime"
	OptionMaxNodeProvisionTime             = "maxnodeprovisiontime"
	OptionIgnoreDaemonSetsUtilization      = "ignoredaemonsetsutilization"
	// OptionReservedNodes is gpuscale's own: the nodes of the group a
	// capacity reservation or capacity block pays for, a whole number.
	OptionReservedNodes = "reservednodes"
	// OptionCapacityBlockEnd is gpuscale's own: when the capacity block
	// backing the group ends, an RFC 3339 time.
	OptionCapacityBlockEnd = "capacityblockend"
	// OptionQueuedProvisioning is gpuscale's own: true for a group that
	// takes queued capacity (a GKE node pool with queued provisioning),
	// grown only through the cloud's queue for ProvisioningRequests of the
	// class queued-provisioning.gke.io.
	OptionQueuedProvisioning = "queuedprovisioning"
)

// unsupportedOptions are upstream option keys gpuscale reads but does not
// apply: they are reported as such, never taken for typos.
var unsupportedOptions = []string{"maxnodestartuptime", "zeroormaxnodescaling", "allowedscheduledownfailure"}

// GroupOptionKeys lists the keys ParseGroupOptions applies, sorted.
func GroupOptionKeys() []string {
	keys := []string{
		OptionIgnoreDaemonSetsUtilization, OptionMaxNodeProvisionTime, OptionScaleDownGPUUtilizationThreshold,
		OptionScaleDownUnneededTime, OptionScaleDownUnreadyTime, OptionScaleDownUtilizationThreshold,
		OptionReservedNodes, OptionCapacityBlockEnd, OptionQueuedProvisioning,
	}
	slices.Sort(keys)
	return keys
}

// ParseGroupOptions reads a group's options from key/value text, keys
// matched without regard to case. It returns nil when values set none.
// Upstream keys that gpuscale does not apply are returned in unsupported;
// an unknown key or a value that does not parse, or is out of range, is an
// error naming the key and the value, and then no option is returned, so a
// group never runs on half its options.
func ParseGroupOptions(values map[string]string) (opts *snapshot.GroupOptions, unsupported []string, err error) {
	o := &snapshot.GroupOptions{}
	var errs []error
	for _, raw := range slices.Sorted(maps.Keys(values)) {
		key, v := strings.ToLower(strings.TrimSpace(raw)), strings.TrimSpace(values[raw])
		if e := setOption(o, key, v); e != nil {
			if errors.Is(e, errUnsupported) {
				unsupported = append(unsupported, raw)
				continue
			}
			errs = append(errs, fmt.Errorf("%s=%q: %w", raw, values[raw], e))
		}
	}
	if len(errs) == 0 {
		if err := o.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, unsupported, errors.Join(errs...)
	}
	if o.IsZero() {
		return nil, unsupported, nil
	}
	return o, unsupported, nil
}

var errUnsupported = errors.New("not applied by gpuscale")

func setOption(o *snapshot.GroupOptions, key, v string) error {
	switch key {
	case OptionScaleDownUtilizationThreshold:
		return parseRatio(v, &o.ScaleDownUtilizationThreshold)
	case OptionScaleDownGPUUtilizationThreshold:
		return parseRatio(v, &o.ScaleDownGPUUtilizationThreshold)
	case OptionScaleDownUnneededTime:
		return parseDuration(v, &o.ScaleDownUnneededTime)
	case OptionScaleDownUnreadyTime:
		return parseDuration(v, &o.ScaleDownUnreadyTime)
	case OptionMaxNodeProvisionTime:
		return parseDuration(v, &o.MaxNodeProvisionTime)
	case OptionIgnoreDaemonSetsUtilization:
		return parseBool(v, &o.IgnoreDaemonSetsUtilization)
	case OptionQueuedProvisioning:
		return parseBool(v, &o.QueuedProvisioning)
	case OptionReservedNodes:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number of nodes, 0 or more, such as 8")
		}
		o.ReservedNodes = &n
		return nil
	case OptionCapacityBlockEnd:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("want an RFC 3339 time, such as 2026-12-01T11:30:00Z")
		}
		t = t.UTC()
		o.CapacityBlockEnd = &t
		return nil
	}
	if slices.Contains(unsupportedOptions, key) {
		return errUnsupported
	}
	return fmt.Errorf("unknown option; known: %s", strings.Join(GroupOptionKeys(), ", "))
}

func parseBool(v string, dst **bool) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*dst = &b
	return nil
}

func parseRatio(v string, dst **float64) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return fmt.Errorf("want a number from 0 to 1, such as 0.5")
	}
	*dst = &f
	return nil
}

func parseDuration(v string, dst **time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a non-negative duration, such as 10m0s")
	}
	*dst = &d
	return nil
}

// OptionText is an option's value in a YAML or JSON configuration: a
// string, a number or a boolean, kept as text for ParseGroupOptions.
type OptionText string

// UnmarshalJSON takes any scalar; objects and lists are refused.
func (o *OptionText) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "" || s == "null" || s[0] == '{' || s[0] == '[':
		return fmt.Errorf("want a string, number or boolean, got %s", s)
	case s[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*o = OptionText(v)
	default:
		*o = OptionText(s)
	}
	return nil
}

// ParseGroupOptionTexts is ParseGroupOptions over configuration values.
func ParseGroupOptionTexts(values map[string]OptionText) (*snapshot.GroupOptions, []string, error) {
	m := make(map[string]string, len(values))
	for k, v := range values {
		m[k] = string(v)
	}
	return ParseGroupOptions(m)
}
