package scenario

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtins lists the names of the built-in scenarios, sorted.
func Builtins() []string {
	entries, _ := builtinFS.ReadDir("builtin")
	out := []string{SyntheticDayName}
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Builtin parses the built-in scenario called name.
func Builtin(name string) (*Scenario, error) {
	if name == SyntheticDayName {
		s := SyntheticDay()
		return s, s.Validate()
	}
	data, err := BuiltinYAML(name)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("built-in scenario %s: %w", name, err)
	}
	return s, nil
}

// BuiltinYAML returns the text of a built-in scenario kept as YAML.
func BuiltinYAML(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (known: %s)", name, strings.Join(Builtins(), ", "))
	}
	return data, nil
}
