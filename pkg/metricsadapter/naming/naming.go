// Package naming compiles a prometheus-adapter rule into the steps that
// turn a Prometheus series into a metric: filter the series by name, name
// the metric, associate series labels with Kubernetes resources, and render
// the rule's metricsQuery.
package naming

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
)

// Rule is a compiled discovery rule. It is safe for concurrent use.
type Rule struct {
	// ID names the rule in errors and logs, for example "rules[0]".
	ID string
	// SeriesQuery is the rule's series selector.
	SeriesQuery string
	// External is true for external rules.
	External bool
	// Namespaced, for external rules, limits queries to the request's
	// namespace (when the rule maps a label to namespaces).
	Namespaced bool

	filters   []filter
	nameRe    *regexp.Regexp
	nameAs    string
	fixedName string
	overrides map[string]schema.GroupResource
	template  *regexp.Regexp
	query     *template.Template
}

type filter struct {
	re   *regexp.Regexp
	keep bool // keep matches (is) or drop them (isNot)
}

// Compile compiles r; id names it in errors ("rules[3]").
func Compile(id string, r config.Rule, external bool) (*Rule, error) {
	c := &Rule{ID: id, SeriesQuery: r.SeriesQuery, External: external, Namespaced: true}
	if r.Resources.Namespaced != nil {
		c.Namespaced = *r.Resources.Namespaced
	}
	for i, f := range r.SeriesFilters {
		expr, keep := f.Is, true
		if f.IsNot != "" {
			expr, keep = f.IsNot, false
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s.seriesFilters[%d]: %q: %w", id, i, expr, err)
		}
		c.filters = append(c.filters, filter{re: re, keep: keep})
	}
	if err := c.compileName(r.Name); err != nil {
		return nil, fmt.Errorf("%s.name.matches: %w", id, err)
	}
	if err := c.compileResources(r.Resources); err != nil {
		return nil, fmt.Errorf("%s.resources.template: %w", id, err)
	}
	q, err := config.NewTemplate(id, r.MetricsQuery)
	if err != nil {
		return nil, fmt.Errorf("%s.metricsQuery: %w", id, err)
	}
	c.query = q
	return c, nil
}

func (c *Rule) compileName(n config.NameMapping) error {
	matches := n.Matches
	if matches == "" {
		matches = "^(.*)$"
	}
	re, err := regexp.Compile(matches)
	if err != nil {
		return fmt.Errorf("%q: %w", matches, err)
	}
	c.nameRe, c.nameAs = re, n.As
	if c.nameAs == "" {
		c.nameAs = "$0"
		if re.NumSubexp() > 0 {
			c.nameAs = "$1"
		}
	}
	if !strings.Contains(c.nameAs, "$") {
		c.fixedName = c.nameAs
	}
	return nil
}

// Placeholders stand in for the template's fields while it is turned into
// a regular expression; QuoteMeta leaves them intact.
const (
	groupPlaceholder    = "GROUPxPLACEHOLDER"
	resourcePlaceholder = "RESOURCExPLACEHOLDER"
)

func (c *Rule) compileResources(m config.ResourceMapping) error {
	c.overrides = make(map[string]schema.GroupResource, len(m.Overrides))
	for label, gr := range m.Overrides {
		c.overrides[label] = schema.GroupResource{Group: gr.Group, Resource: gr.Resource}
	}
	if m.Template == "" {
		return nil
	}
	t, err := config.NewTemplate("resources", m.Template)
	if err != nil {
		return err
	}
	out, err := config.Render(t, config.ResourceArgs{Group: groupPlaceholder, Resource: resourcePlaceholder}, config.CheckLimits())
	if err != nil {
		return err
	}
	expr := regexp.QuoteMeta(out)
	expr = strings.ReplaceAll(expr, groupPlaceholder, `(?P<group>.*?)`)
	expr = strings.ReplaceAll(expr, resourcePlaceholder, `(?P<resource>.+?)`)
	re, err := regexp.Compile("^" + expr + "$")
	if err != nil {
		return fmt.Errorf("%q does not give a usable pattern: %w", m.Template, err)
	}
	if re.SubexpIndex("resource") < 0 {
		return fmt.Errorf("%q must use <<.Resource>>", m.Template)
	}
	c.template = re
	return nil
}

// KeepSeries applies the rule's series filters to a series name.
func (c *Rule) KeepSeries(series string) bool {
	for _, f := range c.filters {
		if f.re.MatchString(series) != f.keep {
			return false
		}
	}
	return true
}

// MetricName names the metric for a series; false when the series name
// does not match name.matches.
func (c *Rule) MetricName(series string) (string, bool) {
	loc := c.nameRe.FindStringSubmatchIndex(series)
	if loc == nil {
		return "", false
	}
	name := string(c.nameRe.ExpandString(nil, c.nameAs, series, loc))
	return name, name != ""
}

// MayName reports whether the rule could name a metric metric: always true
// unless name.as is a fixed name. It lets a lookup of an unknown metric
// refresh only the rules that could serve it.
func (c *Rule) MayName(metric string) bool {
	return c.fixedName == "" || c.fixedName == metric
}

// ResourceForLabel returns the resource a series label stands for, as
// written in the rule (singular or plural; the caller normalizes it).
// Overrides win over the template.
func (c *Rule) ResourceForLabel(label string) (schema.GroupResource, bool) {
	if gr, ok := c.overrides[label]; ok {
		return gr, true
	}
	if c.template == nil {
		return schema.GroupResource{}, false
	}
	m := c.template.FindStringSubmatch(label)
	if m == nil {
		return schema.GroupResource{}, false
	}
	gr := schema.GroupResource{Resource: m[c.template.SubexpIndex("resource")]}
	if i := c.template.SubexpIndex("group"); i >= 0 {
		gr.Group = m[i]
	}
	return gr, true
}

// RenderQuery renders the rule's metricsQuery.
func (c *Rule) RenderQuery(args config.QueryArgs) (string, error) {
	q, err := config.Render(c.query, args, config.RequestLimits())
	if err != nil {
		return "", fmt.Errorf("%s.metricsQuery: %w", c.ID, err)
	}
	return q, nil
}
