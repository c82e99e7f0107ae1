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

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Unmarshal decodes YAML (or JSON) data into v. Every strict problem is
// reported, each as `unknown field "path.name"` or `duplicate field
// "path.name"`.
func Unmarshal(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
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
