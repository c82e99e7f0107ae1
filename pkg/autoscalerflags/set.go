package autoscalerflags

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Setting is one flag given as a name and a value, as `gpuscale simulate
// --set` and scenario files give them.
type Setting struct {
	Name, Value string
}

// ParseSettings reads "name=value,name=value" (names with or without their
// leading dashes). A repeatable flag may appear more than once. A part
// without "=" continues the value before it, so values with commas need no
// quoting: "expander=price,least-waste,max-nodes-total=40".
func ParseSettings(s string) ([]Setting, error) {
	var out []Setting
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok && len(out) > 0 {
			out[len(out)-1].Value += "," + part
			continue
		}
		k = strings.TrimLeft(strings.TrimSpace(k), "-")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not name=value", part)
		}
		out = append(out, Setting{Name: k, Value: strings.TrimSpace(v)})
	}
	return out, nil
}

// SettingsOf turns a map of flag names to values (a scenario's autoscaler
// section) into settings, sorted by name. A list value repeats its flag.
func SettingsOf(m map[string]any) ([]Setting, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []Setting
	for _, k := range names {
		switch v := m[k].(type) {
		case []any:
			for _, x := range v {
				out = append(out, Setting{Name: k, Value: fmt.Sprint(x)})
			}
		case nil:
			return nil, fmt.Errorf("--%s: no value", k)
		default:
			out = append(out, Setting{Name: k, Value: fmt.Sprint(v)})
		}
	}
	return out, nil
}

// Apply sets each setting as if given on the command line. Unknown names
// and unparsable values are errors naming the flag and the value; value
// checks that need the whole set wait for Validate. A profile in the group
// is applied first, over what earlier groups set (a scenario file), and
// the group's other settings over it.
func (f *Flags) Apply(settings []Setting) error {
	var errs []error
	for _, s := range settings {
		if s.Name != "profile" {
			continue
		}
		ps, err := profile(s.Value)
		if err == nil {
			f.profile, f.profileApplied = s.Value, true
			err = f.Apply(ps)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range settings {
		if s.Name == "profile" {
			continue
		}
		if f.fs.Lookup(s.Name) == nil {
			errs = append(errs, fmt.Errorf("--%s: not a decision flag of cluster-autoscaler (docs/flags.md lists them), got %q", s.Name, s.Name+"="+s.Value))
			continue
		}
		if err := f.fs.Set(s.Name, s.Value); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// IsDecisionFlag says whether name (without dashes) is a decision flag,
// profile included: what --set and --compare take.
func IsDecisionFlag(name string) bool {
	return name == "profile" || New().fs.Lookup(name) != nil
}

// Parse returns the decision for a list of setting groups applied in
// order over the defaults (the scenario's, then --set, then one --compare),
// validated.
func Parse(groups ...[]Setting) (Decision, error) {
	f := New()
	for _, g := range groups {
		if err := f.Apply(g); err != nil {
			return Decision{}, err
		}
	}
	if err := f.Validate(); err != nil {
		return Decision{}, err
	}
	return f.Decision, nil
}

// Label names a setting group for reports: name=value joined by commas.
func Label(settings []Setting) string {
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, ",")
}
