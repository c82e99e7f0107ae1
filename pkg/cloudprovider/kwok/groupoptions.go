package kwok

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// groupOptions reads a group's autoscalingOptions: a map of the upstream
// option keys (cloudprovider.GroupOptionKeys) to values, as in
//
//	autoscalingOptions: {scaledownunneededtime: 2m, scaledownutilizationthreshold: 0.3}
//
// Options gpuscale does not apply are refused, like any unknown field.
func (d *decoder) groupOptions(path string, raw json.RawMessage) *snapshot.GroupOptions {
	if k := kind(raw); k == "" || k == "null" {
		return nil
	}
	var fields map[string]*scalar
	if !d.object(path, raw, &fields) {
		return nil
	}
	values := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		s := fields[k]
		switch kind(s.rawOrNil()) {
		case "string":
			values[k] = d.str(path+"."+k, s)
		case "number", "bool":
			values[k] = string(s.raw)
		default:
			d.add(path+"."+k, "want a string, number or boolean")
		}
	}
	o, unsupported, err := cloudprovider.ParseGroupOptions(values)
	for _, k := range unsupported {
		d.add(path+"."+k, "not applied by gpuscale; remove it")
	}
	if err != nil {
		d.add(path, "%v", err)
		return nil
	}
	return o
}

// rawOrNil is the scalar's JSON, nil when absent.
func (s *scalar) rawOrNil() []byte {
	if s == nil {
		return nil
	}
	return s.raw
}
