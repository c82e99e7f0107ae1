package strictyaml

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

type withDurations struct {
	Refresh metav1.Duration   `json:"refreshInterval"`
	Groups  []durationGroup   `json:"groups"`
	Ratio   float64           `json:"ratio"`
	Nested  map[string]doc    `json:"nested"`
	Later   *metav1.Duration  `json:"later"`
	Labels  map[string]string `json:"labels"`
}

type durationGroup struct {
	Delay metav1.Duration `json:"delay"`
	Scale float64         `json:"scale"`
}

// A value that a field's own decoder refuses, and a NaN or infinity, is
// named with its path; every such field is reported.
func TestValueErrorsNameTheirField(t *testing.T) {
	for in, want := range map[string][]string{
		"refreshInterval: 1000000000h\nlater: 5q\n": {`refreshInterval: time: invalid duration "1000000000h"`, `later: time: unknown unit "q"`},
		"groups:\n- delay: 1m\n- delay: forever\n":  {`groups[1].delay: time: invalid duration "forever"`},
		"ratio: .nan\n":                         {"ratio: line 1: .nan is not a number"},
		"groups:\n- scale: 1\n- scale: -.inf\n": {"groups[1].scale: line 3: -.inf is not a number"},
	} {
		var d withDurations
		err := Unmarshal([]byte(in), &d)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v, want %q", in, err, w)
			}
		}
	}
}
