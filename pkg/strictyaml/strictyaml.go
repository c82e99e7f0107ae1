// Package strictyaml decodes YAML configuration strictly: a field that the
// target does not have is an error, and so is a field written in another
// case ("PROJECT" for "project") or given twice. sigs.k8s.io/yaml's own
// UnmarshalStrict matches field names regardless of case, as encoding/json
// does, so a misspelt field can be taken silently; here the YAML becomes
// JSON with sigs.k8s.io/yaml and is decoded with sigs.k8s.io/json, as
// Kubernetes decodes its objects.
package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Unmarshal decodes YAML (or JSON) data into v. Every strict problem is
// reported, each as `unknown field "path.name"` or `duplicate field
// "path.name"`.
//
// A NaN or an infinity is refused with its path and line; a value that a
// field's own decoder refuses (a duration, a quantity) is reported with
// the field's path, and every such field is reported, not only the first.
func Unmarshal(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		if nf := NonFinite(data); nf != nil {
			return nf
		}
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		// A type error names its field already; find the field of any other.
		if t := reflect.TypeOf(v); t != nil && !strings.Contains(err.Error(), "Go struct field") {
			if located := locate(js, t, ""); len(located) > 0 {
				return errors.Join(located...)
			}
		}
		return fmt.Errorf("%s", trimJSON(err.Error()))
	}
	return errors.Join(strict...)
}

// trimJSON drops the decoder's "json: " prefix.
func trimJSON(msg string) string {
	const p = "json: "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
