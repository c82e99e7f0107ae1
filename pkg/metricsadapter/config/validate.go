package config

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// QueryArgs is what a metricsQuery template sees, as in prometheus-adapter.
type QueryArgs struct {
	// Series is the series name, for example DCGM_FI_DEV_GPU_UTIL.
	Series string
	// LabelMatchers is the comma-separated matchers for the request
	// (object names, namespace, metric selector).
	LabelMatchers string
	// LabelValuesByName maps each object label to its value pattern
	// ("pod-a|pod-b").
	LabelValuesByName map[string]string
	// GroupBy is the comma-separated labels to group by.
	GroupBy string
	// GroupBySlice is GroupBy as a list.
	GroupBySlice []string
}

// ResourceArgs is what a resources.template sees.
type ResourceArgs struct {
	Group    string
	Resource string
}

// NewTemplate parses a rule template with prometheus-adapter's << >>
// delimiters.
func NewTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Delims("<<", ">>").Option("missingkey=error").Parse(text)
}

// sampleQueryArgs stand in for a request's when a metricsQuery template is
// checked: one object, one matcher, grouped by its label.
var sampleQueryArgs = QueryArgs{
	Series: "series", LabelMatchers: `pod="p"`, LabelValuesByName: map[string]string{"pod": "p"},
	GroupBy: "pod", GroupBySlice: []string{"pod"},
}

// validateRules checks what the YAML decoder cannot: required fields,
// regular expressions, templates (including the fields they refer to, by
// executing them against sample arguments) and PromQL (the series query
// as it is, the metrics query as the sample arguments render it). A query
// that needs an experimental Prometheus feature is accepted with a warning.
func validateRules(field string, rules []Rule, external bool, pq *promQL, warn func(string)) error {
	for i, r := range rules {
		if err := validateRule(r, external, pq); err != nil {
			if errors.Is(err, errExperimental) {
				warn(fmt.Sprintf("%s[%d].%v; Prometheus must run with that feature enabled", field, i, err))
				continue
			}
			return fmt.Errorf("%s[%d].%w", field, i, err)
		}
	}
	return nil
}

func validateRule(r Rule, external bool, pq *promQL) error {
	if r.SeriesQuery == "" {
		return errors.New("seriesQuery: must be set")
	}
	if err := pq.checkSelector(r.SeriesQuery); err != nil {
		return fmt.Errorf("seriesQuery: %w", err)
	}
	for j, f := range r.SeriesFilters {
		if err := validateFilter(f); err != nil {
			return fmt.Errorf("seriesFilters[%d].%w", j, err)
		}
	}
	if err := validateResources(r.Resources, external); err != nil {
		return fmt.Errorf("resources.%w", err)
	}
	if _, err := regexp.Compile(r.Name.Matches); err != nil {
		return fmt.Errorf("name.matches: %q is not a regular expression: %w", r.Name.Matches, err)
	}
	if r.MetricsQuery == "" {
		return errors.New("metricsQuery: must be set")
	}
	rendered, err := renderTemplate(r.MetricsQuery, sampleQueryArgs)
	if err != nil {
		return fmt.Errorf("metricsQuery: %q: %w", r.MetricsQuery, err)
	}
	if err := pq.checkExpr(rendered); err != nil {
		return fmt.Errorf("metricsQuery: %q renders to %q, which is not valid PromQL: %w", r.MetricsQuery, rendered, err)
	}
	return nil
}

func validateFilter(f RegexFilter) error {
	switch {
	case f.Is != "" && f.IsNot != "":
		return fmt.Errorf("is: set together with isNot (%q, %q); use one per filter", f.Is, f.IsNot)
	case f.Is != "":
		if _, err := regexp.Compile(f.Is); err != nil {
			return fmt.Errorf("is: %q is not a regular expression: %w", f.Is, err)
		}
	case f.IsNot != "":
		if _, err := regexp.Compile(f.IsNot); err != nil {
			return fmt.Errorf("isNot: %q is not a regular expression: %w", f.IsNot, err)
		}
	default:
		return errors.New("is: one of is or isNot must be set")
	}
	return nil
}

func validateResources(m ResourceMapping, external bool) error {
	if !external && m.Template == "" && len(m.Overrides) == 0 {
		return errors.New("template: a rule needs a template or overrides to associate series with objects")
	}
	if !external && m.Namespaced != nil {
		return errors.New("namespaced: only external rules take this field")
	}
	if m.Template != "" {
		const placeholder = "RESOURCExPLACEHOLDER"
		out, err := renderTemplate(m.Template, ResourceArgs{Group: "apps", Resource: placeholder})
		if err != nil {
			return fmt.Errorf("template: %q: %w", m.Template, err)
		}
		if !strings.Contains(out, placeholder) {
			return fmt.Errorf("template: %q must use <<.Resource>>, the resource a label names", m.Template)
		}
	}
	for _, label := range sortedKeys(m.Overrides) {
		if m.Overrides[label].Resource == "" {
			return fmt.Errorf("overrides.%s.resource: must be set", label)
		}
	}
	return nil
}

func renderTemplate(text string, args any) (string, error) {
	t, err := NewTemplate("check", text)
	if err != nil {
		return "", err
	}
	return Render(t, args, CheckLimits())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
