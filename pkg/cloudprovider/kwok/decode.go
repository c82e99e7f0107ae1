package kwok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The file is decoded in two steps so every error names its field:
// sigs.k8s.io/yaml turns YAML into JSON (refusing duplicate keys), then
// sigs.k8s.io/json decodes it strictly into the file structs below, whose
// leaves are all `scalar` (any JSON value, kept as text). Because no leaf
// can fail to decode, type errors are found by the converters, which know
// the full path: nodeGroups[1].maxSize, not "cannot unmarshal string into
// Go struct field". sigs.k8s.io/yaml's own UnmarshalStrict reports unknown
// fields without their path, which is why it is not used for the last step.

type fileConfig struct {
	ProvisioningDelay *scalar         `json:"provisioningDelay"`
	DevicePluginDelay *scalar         `json:"devicePluginDelay"`
	QueuedDelay       *scalar         `json:"queuedProvisioningDelay"`
	NodeGroups        json.RawMessage `json:"nodeGroups"`
}

type fileNodeGroup struct {
	Name         *scalar         `json:"name"`
	MinSize      *scalar         `json:"minSize"`
	MaxSize      *scalar         `json:"maxSize"`
	InstanceType *scalar         `json:"instanceType"`
	PricePerHour *scalar         `json:"pricePerHour"`
	Spot         *scalar         `json:"spot"`
	Zone         *scalar         `json:"zone"`
	Template     json.RawMessage `json:"template"`
	// AutoscalingOptions are the group's options (groupoptions.go).
	AutoscalingOptions json.RawMessage `json:"autoscalingOptions"`
}

type fileTemplate struct {
	Labels   json.RawMessage `json:"labels"`
	Taints   json.RawMessage `json:"taints"`
	Capacity json.RawMessage `json:"capacity"`
	Devices  json.RawMessage `json:"devices"`
}

type fileDevices struct {
	Driver     *scalar         `json:"driver"`
	Count      *scalar         `json:"count"`
	NamePrefix *scalar         `json:"namePrefix"`
	GPUModel   *scalar         `json:"gpuModel"`
	Attributes json.RawMessage `json:"attributes"`
	Capacity   json.RawMessage `json:"capacity"`
}

type fileTaint struct {
	Key    *scalar `json:"key"`
	Value  *scalar `json:"value"`
	Effect *scalar `json:"effect"`
}

// scalar holds any JSON value as its text; converters check its kind.
type scalar struct{ raw []byte }

func (s *scalar) UnmarshalJSON(b []byte) error {
	s.raw = append([]byte(nil), b...)
	return nil
}

// absent is true for a field left out or left empty (YAML `zone:`).
func absent(s *scalar) bool { return s == nil || string(s.raw) == "null" }

// decoder converts file structs to Config, collecting problems by path.
type decoder struct{ problems }

func decode(data []byte) (*Config, []error) {
	d := &decoder{}
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		d.list = append(d.list, err) // "yaml: line 3: ..." names its line
		return nil, d.list
	}
	if len(bytes.TrimSpace(jsonData)) == 0 || string(jsonData) == "null" {
		d.add("", "empty")
		return nil, d.list
	}
	var f fileConfig
	if !d.object("", jsonData, &f) {
		return nil, d.list
	}
	cfg := &Config{
		ProvisioningDelay: d.duration("provisioningDelay", f.ProvisioningDelay),
		DevicePluginDelay: d.duration("devicePluginDelay", f.DevicePluginDelay),
		QueuedDelay:       d.duration("queuedProvisioningDelay", f.QueuedDelay),
	}
	var groups []json.RawMessage
	if d.sequence("nodeGroups", f.NodeGroups, &groups) {
		for i, raw := range groups {
			cfg.NodeGroups = append(cfg.NodeGroups, d.group(fmt.Sprintf("nodeGroups[%d]", i), raw))
		}
	}
	return cfg, d.list
}

func (d *decoder) group(path string, raw json.RawMessage) NodeGroupConfig {
	var f fileNodeGroup
	if !d.object(path, raw, &f) {
		return NodeGroupConfig{}
	}
	g := NodeGroupConfig{
		Name:         d.str(path+".name", f.Name),
		MinSize:      d.integer(path+".minSize", f.MinSize),
		InstanceType: d.str(path+".instanceType", f.InstanceType),
		PricePerHour: d.number(path+".pricePerHour", f.PricePerHour),
		Spot:         d.boolean(path+".spot", f.Spot),
		Zone:         d.str(path+".zone", f.Zone),
	}
	if absent(f.MaxSize) {
		d.add(path+".maxSize", "required")
	} else {
		g.MaxSize = d.integer(path+".maxSize", f.MaxSize)
	}
	if k := kind(f.Template); k == "" || k == "null" {
		d.add(path+".template", "required (capacity at least)")
	} else {
		g.Template = d.template(path+".template", f.Template)
	}
	g.Options = d.groupOptions(path+".autoscalingOptions", f.AutoscalingOptions)
	return g
}

func (d *decoder) template(path string, raw json.RawMessage) TemplateConfig {
	var t fileTemplate
	var out TemplateConfig
	if !d.object(path, raw, &t) {
		return out
	}
	if k := kind(t.Labels); k != "" && k != "null" {
		var labels map[string]*scalar
		if d.object(path+".labels", t.Labels, &labels) {
			out.Labels = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				out.Labels[k] = d.str(fmt.Sprintf("%s.labels[%q]", path, k), labels[k])
			}
		}
	}
	var taints []json.RawMessage
	if d.sequence(path+".taints", t.Taints, &taints) {
		for i, raw := range taints {
			p := fmt.Sprintf("%s.taints[%d]", path, i)
			var ft fileTaint
			if d.object(p, raw, &ft) {
				out.Taints = append(out.Taints, v1.Taint{
					Key: d.str(p+".key", ft.Key), Value: d.str(p+".value", ft.Value),
					Effect: v1.TaintEffect(d.str(p+".effect", ft.Effect)),
				})
			}
		}
	}
	var devices []json.RawMessage
	if d.sequence(path+".devices", t.Devices, &devices) {
		for i, raw := range devices {
			out.Devices = append(out.Devices, d.devices(fmt.Sprintf("%s.devices[%d]", path, i), raw))
		}
	}
	var capacity map[string]*scalar
	if k := kind(t.Capacity); k == "" || k == "null" {
		d.add(path+".capacity", "required")
	} else if d.object(path+".capacity", t.Capacity, &capacity) {
		out.Capacity = v1.ResourceList{}
		for _, name := range slices.Sorted(maps.Keys(capacity)) {
			p := fmt.Sprintf("%s.capacity[%q]", path, name)
			if q, ok := d.quantity(p, capacity[name]); ok {
				out.Capacity[v1.ResourceName(name)] = q
			}
		}
	}
	return out
}

// strictError matches what sigs.k8s.io/json reports for unknown and
// duplicate fields: `unknown field "template.gpu"`.
var strictError = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// object decodes a JSON object strictly into v; false when it is not one
// or has fields v does not know.
func (d *decoder) object(path string, raw json.RawMessage, v any) bool {
	if k := kind(raw); k != "map" {
		d.add(path, "want a map, got %s", k)
		return false
	}
	strict, err := sigsjson.UnmarshalStrict(raw, v, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		// Leaves are scalars and containers are checked before decoding,
		// so this is a shape the checks above did not foresee.
		d.add(path, "%v", err)
		return false
	}
	for _, e := range strict {
		m := strictError.FindStringSubmatch(e.Error())
		if m == nil {
			d.add(path, "%v", e)
			continue
		}
		parent, field := path, m[2]
		if i := strings.LastIndex(field, "."); i >= 0 {
			parent, field = join(path, field[:i]), field[i+1:]
		}
		d.add(parent, "%s field %q", m[1], field)
	}
	return len(strict) == 0
}

// join appends a relative field path to path ("" is the top level).
func join(path, rel string) string {
	if path == "" {
		return rel
	}
	return path + "." + rel
}

// sequence decodes an optional JSON list; false when absent or not a list.
func (d *decoder) sequence(path string, raw json.RawMessage, out *[]json.RawMessage) bool {
	switch k := kind(raw); k {
	case "", "null":
		return false
	case "list":
		if err := json.Unmarshal(raw, out); err != nil {
			d.add(path, "%v", err)
			return false
		}
		return true
	default:
		d.add(path, "want a list, got %s", k)
		return false
	}
}

func (d *decoder) str(path string, s *scalar) string {
	if absent(s) {
		return ""
	}
	var out string
	if kind(s.raw) != "string" || json.Unmarshal(s.raw, &out) != nil {
		d.add(path, "want a string, got %s (quote it)", s.raw)
	}
	return out
}

func (d *decoder) integer(path string, s *scalar) int {
	if absent(s) {
		return 0
	}
	n, err := strconv.Atoi(string(s.raw))
	if kind(s.raw) != "number" || err != nil {
		d.add(path, "want a whole number, got %s", s.raw)
	}
	return n
}

func (d *decoder) number(path string, s *scalar) float64 {
	if absent(s) {
		return 0
	}
	f, err := strconv.ParseFloat(string(s.raw), 64)
	if kind(s.raw) != "number" || err != nil {
		d.add(path, "want a number, got %s", s.raw)
	}
	return f
}

func (d *decoder) boolean(path string, s *scalar) bool {
	if absent(s) {
		return false
	}
	switch string(s.raw) {
	case "true":
		return true
	case "false":
		return false
	}
	d.add(path, "want true or false, got %s", s.raw)
	return false
}

func (d *decoder) duration(path string, s *scalar) time.Duration {
	if absent(s) {
		return 0
	}
	var text string
	if kind(s.raw) == "string" && json.Unmarshal(s.raw, &text) == nil {
		if v, err := time.ParseDuration(text); err == nil {
			return v
		}
	}
	d.add(path, `want a duration such as "30s" or "2m", got %s`, s.raw)
	return 0
}

// quantity accepts "16Gi" and bare numbers alike (YAML `pods: 110`).
func (d *decoder) quantity(path string, s *scalar) (qty resource.Quantity, ok bool) {
	if absent(s) {
		d.add(path, "want a quantity such as \"4\" or \"16Gi\", got nothing")
		return qty, false
	}
	text := string(s.raw)
	switch kind(s.raw) {
	case "string":
		_ = json.Unmarshal(s.raw, &text)
	case "number":
	default:
		d.add(path, "want a quantity such as \"4\" or \"16Gi\", got %s", s.raw)
		return qty, false
	}
	q, err := parseQuantity(text)
	if err != nil {
		d.add(path, "%v", err)
		return qty, false
	}
	return q, true
}

// kind names a JSON value's type for messages.
func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "map"
	case '[':
		return "list"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}
