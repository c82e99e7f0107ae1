package dcgmsim

import (
	"strings"
	"testing"
)

// FuzzDecodeLoad: the control endpoint's body decoder never panics, and
// what it accepts is a load within 0..100 with a ramp that is not negative.
func FuzzDecodeLoad(f *testing.F) {
	for _, seed := range []string{
		`{"util": 100, "ramp": "30s"}`, `{"util": 0}`, `{"util": 101}`, `{"ramp": "5s"}`, `{"util": 5, "rmap": "5s"}`,
		`{"util": 5, "ramp": "5 minutes"}`, `{"util": 5, "ramp": "-1s"}`, `util=5`, `{"util": 1e400}`, `{"util": 5} {}`, ``, `null`,
		`{"util": null}`, `{"util": "5"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		l, err := decodeLoad(strings.NewReader(body))
		if err != nil {
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted %+v from %q: %v", l, body, err)
		}
	})
}

// FuzzLoadFromAnnotations: the annotation decoder never panics, and what it
// accepts is a valid load.
func FuzzLoadFromAnnotations(f *testing.F) {
	for _, seed := range [][2]string{{"100", "30s"}, {"0", ""}, {"NaN", ""}, {"-1", ""}, {"50", "-5s"}, {"Inf", "1h"}, {"0x10", "1ns"}, {"", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, util, ramp string) {
		l, ok, err := LoadFromAnnotations(map[string]string{AnnotationUtil: util, AnnotationRamp: ramp})
		if !ok {
			t.Fatalf("the util annotation was not seen")
		}
		if err != nil {
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted %+v from %q, %q: %v", l, util, ramp, err)
		}
	})
}
