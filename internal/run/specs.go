package run

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// nodesValue is the repeatable --nodes flag: each value is parsed once when
// given; a bad one is kept for Validate, so every bad flag is reported at
// once.
type nodesValue struct{ s *ShellOptions }

func (v *nodesValue) Type() string { return "min:max:name" }

func (v *nodesValue) String() string {
	parts := make([]string, len(v.s.NodeGroups))
	for i, g := range v.s.NodeGroups {
		parts[i] = fmt.Sprintf("%d:%d:%s", g.Min, g.Max, g.Name)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v *nodesValue) Set(value string) error {
	spec, err := parseNodeGroup(value)
	for _, g := range v.s.NodeGroups {
		if err == nil && g.Name == spec.Name {
			err = fmt.Errorf("--nodes: want min:max:name, got %q (node group %s is given twice)", value, spec.Name)
		}
	}
	if err != nil {
		v.s.specErrs = append(v.s.specErrs, err)
		return nil
	}
	v.s.NodeGroups = append(v.s.NodeGroups, spec)
	return nil
}

// discoveryValue is the repeatable --node-group-auto-discovery flag.
type discoveryValue struct{ s *ShellOptions }

func (v *discoveryValue) Type() string { return "discovery" }

func (v *discoveryValue) String() string {
	parts := make([]string, len(v.s.AutoDiscovery))
	for i, d := range v.s.AutoDiscovery {
		parts[i] = d.Value
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v *discoveryValue) Set(value string) error {
	spec, err := parseAutoDiscovery(value)
	if err != nil {
		v.s.specErrs = append(v.s.specErrs, err)
		return nil
	}
	v.s.AutoDiscovery = append(v.s.AutoDiscovery, spec)
	return nil
}

// parseNodeGroup parses one --nodes value: min:max:name, 0 <= min <= max.
func parseNodeGroup(value string) (NodeGroupSpec, error) {
	parts := strings.SplitN(value, ":", 3)
	bad := func(why string) error {
		return fmt.Errorf("--nodes: want min:max:name, got %q (%s)", value, why)
	}
	if len(parts) != 3 || parts[2] == "" {
		return NodeGroupSpec{}, bad("three parts, the name not empty")
	}
	lo, err := nodeGroupSize("min", parts[0])
	if err != nil {
		return NodeGroupSpec{}, bad(err.Error())
	}
	hi, err := nodeGroupSize("max", parts[1])
	if err != nil {
		return NodeGroupSpec{}, bad(err.Error())
	}
	switch {
	case lo < 0:
		return NodeGroupSpec{}, bad("min must not be negative")
	case lo > hi:
		return NodeGroupSpec{}, bad(fmt.Sprintf("min %d is above max %d", lo, hi))
	}
	return NodeGroupSpec{Min: lo, Max: hi, Name: parts[2]}, nil
}

// maxNodeGroupSize bounds --nodes sizes: a node group's sizes are int32 in
// the cloud APIs and in upstream's status.
const maxNodeGroupSize = math.MaxInt32

// nodeGroupSize parses min or max of --nodes: digits, at most
// maxNodeGroupSize.
func nodeGroupSize(what, s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n > maxNodeGroupSize:
		return 0, fmt.Errorf("%s %s is above the largest node group size, %d", what, s, maxNodeGroupSize)
	case err != nil:
		return 0, fmt.Errorf("%s %q must be a whole number written in digits", what, s)
	}
	return int(n), nil
}

// parseAutoDiscovery parses one --node-group-auto-discovery value; that
// its kind suits --cloud-provider is checked by Validate.
func parseAutoDiscovery(value string) (AutoDiscoverySpec, error) {
	const want = "want asg:tag=<key>[=<value>],... (aws) or mig:namePrefix=<prefix>,min=<n>,max=<n> (gce)"
	kind, params, ok := strings.Cut(value, ":")
	if !ok || params == "" {
		return AutoDiscoverySpec{}, fmt.Errorf("--node-group-auto-discovery: %s, got %q", want, value)
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
		return AutoDiscoverySpec{}, fmt.Errorf("--node-group-auto-discovery: %s, got %q: %v", want, value, err)
	}
	spec.Value = value
	return spec, nil
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
