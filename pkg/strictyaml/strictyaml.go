// Package strictyaml decodes YAML configuration strictly: a field that the
// target does not have is an error, and so is a field written in another
// case ("PROJECT" for "project") or given twice. sigs.k8s.io/yaml's own
// UnmarshalStrict matches field names regardless of case, as encoding/json
// does, so a misspelt field can be taken silently; here the YAML becomes
// JSON with sigs.k8s.io/yaml and is decoded with sigs.k8s.io/json, as
// Kubernetes decodes its objects.
package strictyaml

import (
	"encoding/json"
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
		fillDecodable(js, v)
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

// UnmarshalAndValidate decodes data into v as Unmarshal does, then runs
// validate on what decoded, even when some fields did not (a field whose
// value its decoder refuses is left at its zero value): every problem of
// the file is reported at once, the decoding ones first. A document that
// is not YAML, or has a key twice, is not validated.
func UnmarshalAndValidate(data []byte, v any, validate func() error) error {
	if _, err := yaml.YAMLToJSONStrict(data); err != nil {
		return Unmarshal(data, v)
	}
	err := Unmarshal(data, v)
	if verr := validate(); verr != nil {
		return errors.Join(err, verr)
	}
	return err
}

// fillDecodable decodes, one by one, the top-level fields of the JSON
// object js that decode on their own into v, after a decoding error left v
// part filled; the others keep their zero values.
func fillDecodable(js []byte, v any) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(js, &fields) != nil {
		return
	}
	for name, raw := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{name: raw})
		if err == nil {
			_ = json.Unmarshal(one, v) // a field that fails is reported by Unmarshal
		}
	}
}

// trimJSON drops the decoder's "json: " prefix.
func trimJSON(msg string) string {
	const p = "json: "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
