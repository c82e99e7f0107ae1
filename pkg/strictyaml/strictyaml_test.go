package strictyaml

import (
	"strings"
	"testing"
)

type doc struct {
	Project string            `json:"project"`
	Zones   []string          `json:"zones,omitempty"`
	Nested  *struct{ A int }  `json:"nested,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

func TestUnmarshal(t *testing.T) {
	var d doc
	if err := Unmarshal([]byte("project: p\nzones: [a]\nlabels: {Team: ml}\n"), &d); err != nil || d.Project != "p" || d.Labels["Team"] != "ml" {
		t.Fatalf("good document: %+v, %v", d, err)
	}
	for in, want := range map[string]string{
		"PROJECT: p\n":                `unknown field "PROJECT"`,
		"projct: p\n":                 `unknown field "projct"`,
		"project: p\nproject: q\n":    `already set in map`,
		"project: [a]\n":              "cannot unmarshal array",
		"nested: {A: 1, a: 2}\n":      `unknown field "nested.a"`,
		"project: p\nzones: {a: b}\n": "cannot unmarshal object",
	} {
		var d doc
		if err := Unmarshal([]byte(in), &d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
