package strictyaml

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
)

// NonFinite finds the first NaN or infinity in a YAML document, which
// JSON cannot hold, and names its path and line: the converter's own
// error ("json: unsupported value: NaN") names neither. nil when there is
// none, or the document does not parse. For readers that convert YAML to
// JSON themselves.
func NonFinite(data []byte) error {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil {
		return nil
	}
	return findNonFinite(&doc, "")
}

func findNonFinite(n *yamlv3.Node, path string) error {
	switch n.Kind {
	case yamlv3.DocumentNode, yamlv3.AliasNode:
		for _, c := range n.Content {
			if err := findNonFinite(c, path); err != nil {
				return err
			}
		}
		if n.Kind == yamlv3.AliasNode && n.Alias != nil {
			return findNonFinite(n.Alias, path)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := findNonFinite(n.Content[i+1], join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := findNonFinite(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case yamlv3.ScalarNode:
		if n.ShortTag() != "!!float" {
			return nil
		}
		var f float64
		if n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			if path == "" {
				path = "the document"
			}
			return fmt.Errorf("%s: line %d: %s is not a number this field can hold (NaN and infinities are refused)", path, n.Line, n.Value)
		}
	}
	return nil
}

// locate explains a decoding error that names no field (a custom
// decoder's, such as a duration's "time: invalid duration"): it decodes
// each field of the document on its own, going down to the deepest one
// that fails, and reports every failing field with its path. nil when it
// finds none.
func locate(js []byte, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" && reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // a leaf that decodes itself; the caller reports it
	}
	var errs []error
	try := func(raw json.RawMessage, ft reflect.Type, at string) {
		_, err := sigsjson.UnmarshalStrict(raw, reflect.New(ft).Interface())
		if err == nil {
			return
		}
		if inner := locate(raw, ft, at); len(inner) > 0 {
			errs = append(errs, inner...)
			return
		}
		errs = append(errs, fmt.Errorf("%s: %s", at, trimJSON(err.Error())))
	}
	switch t.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if json.Unmarshal(js, &fields) != nil {
			return nil
		}
		types := jsonFields(t)
		for _, k := range sortedKeys(fields) {
			if ft, ok := types[k]; ok {
				try(fields[k], ft, join(path, k))
			}
		}
	case reflect.Map:
		var fields map[string]json.RawMessage
		if t.Key().Kind() != reflect.String || json.Unmarshal(js, &fields) != nil {
			return nil
		}
		for _, k := range sortedKeys(fields) {
			try(fields[k], t.Elem(), join(path, k))
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(js, &items) != nil {
			return nil
		}
		for i, item := range items {
			try(item, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	}
	return errs
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// jsonFields maps a struct's JSON names to their types, embedded structs'
// fields included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
