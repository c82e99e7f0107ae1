package kwok

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/inputlimit"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ConfigMapName is the ConfigMap read when no --cloud-config file is given;
// the YAML is under ConfigMapKey.
const (
	ConfigMapName = "gpuscale-kwok-config"
	ConfigMapKey  = "config"
)

// maxGroupNameLen leaves room for "-" and the five-character suffix of a
// node name inside a 63-character DNS label, so every node name is also a
// valid hostname label value.
const maxGroupNameLen = 57

// Config is the kwok provider's configuration after parsing and validation.
type Config struct {
	// ProvisioningDelay is how long after a scale-up the Node object
	// appears (provisioningDelay; omitted means at once).
	ProvisioningDelay time.Duration
	// DevicePluginDelay is how long after a Node appears until its GPUs are
	// allocatable; it registers with none (devicePluginDelay).
	DevicePluginDelay time.Duration
	// QueuedDelay is how long a queued request (a group with the
	// queuedprovisioning option) waits in the cloud's queue before all its
	// nodes are granted (queuedProvisioningDelay; omitted means at the
	// next reconcile).
	QueuedDelay time.Duration
	// NodeGroups are the groups, in file order.
	NodeGroups []NodeGroupConfig
}

// NodeGroupConfig is one entry of nodeGroups.
type NodeGroupConfig struct {
	Name         string
	MinSize      int
	MaxSize      int
	InstanceType string
	PricePerHour float64
	Spot         bool
	Zone         string
	Template     TemplateConfig
	// Options override cluster-wide options for the group
	// (autoscalingOptions, with the upstream keys); nil keeps them.
	Options *snapshot.GroupOptions
}

// TemplateConfig is what every node of a group looks like.
type TemplateConfig struct {
	Labels map[string]string
	Taints []v1.Taint
	// Capacity is the node's capacity and allocatable, GPUs included; cpu
	// and memory are required, pods defaults to 110 (the kubelet's).
	Capacity v1.ResourceList
	// Devices are the DRA devices the node's drivers publish as
	// ResourceSlices, after the device-plugin delay (devices).
	Devices []dra.DeviceSet
}

// LoadConfig reads the configuration from the file at path (--cloud-config)
// or, when path is empty, from the key "config" of the ConfigMap
// ConfigMapName in namespace.
func LoadConfig(ctx context.Context, client kubernetes.Interface, namespace, path string) (*Config, error) {
	if path != "" {
		return LoadConfigFile(path)
	}
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kwok config: no --cloud-config file given, and ConfigMap %s/%s: %w", namespace, ConfigMapName, err)
	}
	text, ok := cm.Data[ConfigMapKey]
	if !ok {
		return nil, fmt.Errorf("kwok config: ConfigMap %s/%s has no key %q", namespace, ConfigMapName, ConfigMapKey)
	}
	cfg, err := ParseConfig([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", namespace, ConfigMapName, ConfigMapKey, err)
	}
	return cfg, nil
}

// LoadConfigFile parses the YAML file at path.
func LoadConfigFile(path string) (*Config, error) {
	data, err := inputlimit.ReadFile(path, inputlimit.ConfigFileBytes)
	if err != nil {
		return nil, fmt.Errorf("kwok config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ConfigError lists everything wrong with a configuration, each message
// starting with the path of the field at fault, e.g.
// `nodeGroups[1].template: unknown field "gpus"`.
type ConfigError struct{ Problems []error }

func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "kwok config: " + strings.Join(msgs, "; ")
}

// Unwrap gives errors.Is and errors.As the problems.
func (e *ConfigError) Unwrap() []error { return e.Problems }

// ParseConfig decodes YAML strictly (unknown and duplicate fields are
// refused) and validates it. Every problem is reported, not just the first.
func ParseConfig(data []byte) (*Config, error) {
	cfg, problems := decode(data)
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate checks a configuration however it was built; the error is a
// *ConfigError.
func (c *Config) Validate() error {
	v := &problems{}
	if c.ProvisioningDelay < 0 {
		v.add("provisioningDelay", "must not be negative, got %s", c.ProvisioningDelay)
	}
	if c.DevicePluginDelay < 0 {
		v.add("devicePluginDelay", "must not be negative, got %s", c.DevicePluginDelay)
	}
	if c.QueuedDelay < 0 {
		v.add("queuedProvisioningDelay", "must not be negative, got %s", c.QueuedDelay)
	}
	if len(c.NodeGroups) == 0 {
		v.add("nodeGroups", "must list at least one node group")
	}
	seen := map[string]int{}
	for i := range c.NodeGroups {
		g := &c.NodeGroups[i]
		path := fmt.Sprintf("nodeGroups[%d]", i)
		if j, dup := seen[g.Name]; dup && g.Name != "" {
			v.add(path+".name", "duplicate %q (also nodeGroups[%d])", g.Name, j)
		}
		seen[g.Name] = i
		validateGroup(v, path, g)
	}
	if len(v.list) > 0 {
		return &ConfigError{Problems: v.list}
	}
	return nil
}

func validateGroup(v *problems, path string, g *NodeGroupConfig) {
	switch {
	case g.Name == "":
		v.add(path+".name", "required")
	case len(g.Name) > maxGroupNameLen:
		v.add(path+".name", "at most %d characters (node names add a suffix), got %q", maxGroupNameLen, g.Name)
	default:
		if msgs := validation.IsDNS1123Label(g.Name); len(msgs) > 0 {
			v.add(path+".name", "%q is not a DNS label: %s", g.Name, strings.Join(msgs, ", "))
		}
	}
	if g.MinSize < 0 {
		v.add(path+".minSize", "must not be negative, got %d", g.MinSize)
	}
	if g.MaxSize < 0 {
		v.add(path+".maxSize", "must not be negative, got %d", g.MaxSize)
	}
	if g.MinSize > g.MaxSize && g.MaxSize >= 0 {
		v.add(path+".minSize", "%d is above maxSize %d", g.MinSize, g.MaxSize)
	}
	if g.PricePerHour < 0 || math.IsNaN(g.PricePerHour) || math.IsInf(g.PricePerHour, 0) {
		v.add(path+".pricePerHour", "must be a non-negative number, got %g", g.PricePerHour)
	}
	labelValue(v, path+".instanceType", g.InstanceType)
	labelValue(v, path+".zone", g.Zone)
	validateTemplate(v, path+".template", &g.Template)
	if err := g.Options.Validate(); err != nil {
		v.add(path+".autoscalingOptions", "%v", err)
	}
}

// providerLabels are set on every node from the group's own fields; a
// template that sets them too would be ambiguous.
var providerLabels = map[string]string{
	LabelNodeGroup:             "name",
	v1.LabelHostname:           "the node name",
	v1.LabelTopologyZone:       "zone",
	v1.LabelInstanceTypeStable: "instanceType",
}

func validateTemplate(v *problems, path string, t *TemplateConfig) {
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		p := fmt.Sprintf("%s.labels[%q]", path, k)
		if from, ok := providerLabels[k]; ok {
			v.add(p, "set by the provider from %s; remove it", from)
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			v.add(p, "invalid label key: %s", strings.Join(msgs, ", "))
		}
		labelValue(v, p, t.Labels[k])
	}
	seen := map[string]int{}
	for i, taint := range t.Taints {
		p := fmt.Sprintf("%s.taints[%d]", path, i)
		if taint.Key == "" {
			v.add(p+".key", "required")
		} else if msgs := validation.IsQualifiedName(taint.Key); len(msgs) > 0 {
			v.add(p+".key", "invalid taint key %q: %s", taint.Key, strings.Join(msgs, ", "))
		}
		labelValue(v, p+".value", taint.Value)
		switch taint.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			v.add(p+".effect", "want NoSchedule, PreferNoSchedule or NoExecute, got %q", taint.Effect)
		}
		id := taint.Key + ":" + string(taint.Effect)
		if j, dup := seen[id]; dup {
			v.add(p, "duplicate taint %s (also taints[%d])", id, j)
		}
		seen[id] = i
	}
	validateCapacity(v, path+".capacity", t.Capacity)
	valid := true
	for i := range t.Devices {
		if err := t.Devices[i].Validate(fmt.Sprintf("%s.devices[%d]", path, i)); err != nil {
			v.list = append(v.list, err)
			valid = false
		}
	}
	if _, err := dra.TemplateSlices(TemplateNamePrefix+"x", t.Devices); err != nil && valid {
		v.add(path, "%v", err) // devices named twice
	}
}

func validateCapacity(v *problems, path string, capacity v1.ResourceList) {
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if _, ok := capacity[name]; !ok {
			v.add(path, "%s is required", name)
		}
	}
	names := make([]string, 0, len(capacity))
	for name := range capacity {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := capacity[v1.ResourceName(name)]
		p := fmt.Sprintf("%s[%q]", path, name)
		if strings.Contains(name, "/") {
			if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
				v.add(p, "invalid resource name: %s", strings.Join(msgs, ", "))
			}
		}
		if q.Sign() < 0 {
			v.add(p, "must not be negative, got %s", q.String())
		}
		// GPUs and pods are counted in whole units by the device plugin and
		// the kubelet; "500m" GPUs would never schedule anything.
		if (gpu.IsGPUResource(v1.ResourceName(name)) || name == string(v1.ResourcePods)) && q.MilliValue()%1000 != 0 {
			v.add(p, "must be a whole number, got %s", q.String())
		}
	}
}

func labelValue(v *problems, path, value string) {
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		v.add(path, "%q is not a valid label value: %s", value, strings.Join(msgs, ", "))
	}
}

// problems collects messages that start with a field path.
type problems struct{ list []error }

func (p *problems) add(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	p.list = append(p.list, errors.New(msg))
}

// parseQuantity is resource.ParseQuantity with the value named on failure.
func parseQuantity(text string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return q, fmt.Errorf("bad quantity %q (want e.g. \"4\", \"500m\", \"16Gi\")", text)
	}
	return q, nil
}
