// Package config reads the metrics adapter's rules: prometheus-adapter's
// configuration file (`rules`, `externalRules`, `resourceRules`) unchanged,
// or the prometheus-adapter Helm chart's values (`prometheus.url`/`port`,
// `rules.custom`, `rules.external`). Parsing is strict: an unknown field, a
// bad regular expression or a bad template is refused with an error that
// names the rule's index and the field.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
	"github.com/gpuscale/gpuscale/pkg/redact"
	"github.com/gpuscale/gpuscale/pkg/strictyaml"
)

// Config is the adapter's parsed configuration.
type Config struct {
	// Rules map Prometheus series to custom metrics on Kubernetes objects
	// (custom.metrics.k8s.io).
	Rules []Rule
	// ExternalRules map Prometheus series to external metrics
	// (external.metrics.k8s.io).
	ExternalRules []Rule
	// PrometheusURL is the Prometheus address given by the Helm values form
	// (prometheus.url, prometheus.port and prometheus.path); empty in the
	// plain form. The --prometheus-url flag takes precedence.
	PrometheusURL string
	// Warnings lists accepted settings that the adapter does not act on
	// (resource rules, the Helm chart's built-in default rules).
	Warnings []string
}

// Rule is one prometheus-adapter discovery rule.
type Rule struct {
	// SeriesQuery selects the series this rule considers, as a Prometheus
	// series selector (the match[] of /api/v1/series).
	SeriesQuery string `json:"seriesQuery"`
	// SeriesFilters further filter the series by name.
	SeriesFilters []RegexFilter `json:"seriesFilters,omitempty"`
	// Resources associates series labels with Kubernetes resources.
	Resources ResourceMapping `json:"resources"`
	// Name turns a series name into a metric name.
	Name NameMapping `json:"name"`
	// MetricsQuery is the PromQL template that computes values.
	MetricsQuery string `json:"metricsQuery"`
}

// RegexFilter keeps series whose name matches Is, or drops series whose name
// matches IsNot. Exactly one of the two is set.
type RegexFilter struct {
	Is    string `json:"is,omitempty"`
	IsNot string `json:"isNot,omitempty"`
}

// ResourceMapping associates series labels with Kubernetes resources, by a
// template over <<.Group>> and <<.Resource>>, by explicit overrides, or both.
type ResourceMapping struct {
	Template  string                   `json:"template,omitempty"`
	Overrides map[string]GroupResource `json:"overrides,omitempty"`
	// Namespaced, for external rules only, says whether the rule's queries
	// are limited to the namespace of the request (default true).
	Namespaced *bool `json:"namespaced,omitempty"`
}

// GroupResource names a Kubernetes resource; Resource may be singular or
// plural ("pod" or "pods").
type GroupResource struct {
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
}

// NameMapping renames series: Matches is a regular expression over the
// series name and As the replacement ($1, ${name}). An empty Matches means
// "^(.*)$"; an empty As means "$1" when Matches has a group, else "$0".
type NameMapping struct {
	Matches string `json:"matches,omitempty"`
	As      string `json:"as,omitempty"`
}

// resourceRules is prometheus-adapter's section for metrics.k8s.io, which
// this adapter does not serve; it is parsed strictly so that typos are
// still caught, then reported as unused.
type resourceRules struct {
	CPU    resourceRule `json:"cpu"`
	Memory resourceRule `json:"memory"`
	Window string       `json:"window,omitempty"`
}

type resourceRule struct {
	ContainerQuery string          `json:"containerQuery,omitempty"`
	NodeQuery      string          `json:"nodeQuery,omitempty"`
	Resources      ResourceMapping `json:"resources"`
	ContainerLabel string          `json:"containerLabel,omitempty"`
}

// Load reads and parses the file at path.
func Load(path string) (*Config, error) {
	data, err := inputlimit.ReadFile(path, inputlimit.ConfigFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading metrics adapter config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("metrics adapter config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse parses YAML (or JSON) in either form and validates every rule.
//
// A document with nothing in it (empty, only comments, or null) is refused:
// it is what a mount of the wrong ConfigMap key or a truncated file looks
// like, and starting with no rules would hide that. A document that says
// "no rules" (rules: []) is accepted with a warning.
func Parse(data []byte) (*Config, error) {
	top, err := objectFields(data, "")
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("the configuration is empty (no content, only comments, or null); " +
			"give rules or externalRules (prometheus-adapter's form) or the chart's values")
	}
	cfg := &Config{}
	if isHelmValues(top) {
		err = parseHelm(top, cfg)
	} else {
		err = parsePlain(top, cfg)
	}
	if err != nil {
		return nil, err
	}
	pq := newPromQL()
	warn := func(w string) { cfg.Warnings = append(cfg.Warnings, w) }
	if err := validateRules("rules", cfg.Rules, false, pq, warn); err != nil {
		return nil, err
	}
	if err := validateRules("externalRules", cfg.ExternalRules, true, pq, warn); err != nil {
		return nil, err
	}
	if err := checkNames(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Rules) == 0 && len(cfg.ExternalRules) == 0 {
		warn("no rules and no externalRules: the adapter serves no metrics until the configuration lists some")
	}
	return cfg, nil
}

// isHelmValues tells the chart's values form apart: it has a prometheus
// section, or rules is a mapping rather than a list.
func isHelmValues(top map[string]json.RawMessage) bool {
	if _, ok := top["prometheus"]; ok {
		return true
	}
	rules, ok := top["rules"]
	return ok && bytes.HasPrefix(bytes.TrimSpace(rules), []byte("{"))
}

func parsePlain(top map[string]json.RawMessage, cfg *Config) error {
	if err := onlyFields(top, "", "rules", "externalRules", "resourceRules"); err != nil {
		return err
	}
	var err error
	if cfg.Rules, err = ruleList(top["rules"], "rules"); err != nil {
		return err
	}
	if cfg.ExternalRules, err = ruleList(top["externalRules"], "externalRules"); err != nil {
		return err
	}
	return resourceSection(top["resourceRules"], "resourceRules", cfg)
}

type helmPrometheus struct {
	URL  string          `json:"url"`
	Port json.RawMessage `json:"port,omitempty"`
	Path string          `json:"path,omitempty"`
}

func parseHelm(top map[string]json.RawMessage, cfg *Config) error {
	if err := onlyFields(top, "", "prometheus", "rules"); err != nil {
		return err
	}
	if raw, ok := top["prometheus"]; ok {
		var p helmPrometheus
		if err := strictUnmarshal(raw, &p); err != nil {
			return fmt.Errorf("prometheus: %w", err)
		}
		url, err := helmURL(p)
		if err != nil {
			return err
		}
		cfg.PrometheusURL = url
	}
	raw, ok := top["rules"]
	if !ok || isNull(raw) {
		return nil
	}
	rules, err := objectFields(raw, "rules")
	if err != nil {
		return err
	}
	if err := onlyFields(rules, "rules", "default", "custom", "external", "existing", "resource"); err != nil {
		return err
	}
	if raw, ok := rules["existing"]; ok && !isNull(raw) && string(raw) != `""` {
		return fmt.Errorf("rules.existing: %s names a ConfigMap; pass that ConfigMap's config.yaml with --config instead", raw)
	}
	if raw, ok := rules["default"]; ok {
		var def bool
		if err := strictUnmarshal(raw, &def); err != nil {
			return fmt.Errorf("rules.default: %w", err)
		}
		if def {
			cfg.Warnings = append(cfg.Warnings,
				"rules.default: true is accepted but the chart's built-in container and namespace rules are not added; list the rules you need under rules.custom")
		}
	}
	if cfg.Rules, err = ruleList(rules["custom"], "rules.custom"); err != nil {
		return err
	}
	if cfg.ExternalRules, err = ruleList(rules["external"], "rules.external"); err != nil {
		return err
	}
	return resourceSection(rules["resource"], "rules.resource", cfg)
}

// helmURL joins the chart's url, port and path the way its deployment
// template does: url:port/path.
func helmURL(p helmPrometheus) (string, error) {
	if p.URL == "" {
		return "", errors.New("prometheus.url: must be set when the prometheus section is present")
	}
	if !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
		return "", fmt.Errorf("prometheus.url: %q must start with http:// or https://", redact.URL(p.URL))
	}
	url := strings.TrimSuffix(p.URL, "/")
	if len(p.Port) > 0 && !isNull(p.Port) {
		var port int
		if err := json.Unmarshal(p.Port, &port); err != nil {
			var s string
			if json.Unmarshal(p.Port, &s) != nil {
				return "", fmt.Errorf("prometheus.port: %s is not a port number", p.Port)
			}
			if _, err := fmt.Sscanf(s, "%d", &port); err != nil {
				return "", fmt.Errorf("prometheus.port: %q is not a port number", s)
			}
		}
		if port < 1 || port > 65535 {
			return "", fmt.Errorf("prometheus.port: %d is out of range 1-65535", port)
		}
		url = fmt.Sprintf("%s:%d", url, port)
	}
	if p.Path != "" {
		url += "/" + strings.TrimPrefix(p.Path, "/")
	}
	return url, nil
}

func resourceSection(raw json.RawMessage, field string, cfg *Config) error {
	if len(raw) == 0 || isNull(raw) || string(raw) == "{}" {
		return nil
	}
	var rr resourceRules
	if err := strictUnmarshal(raw, &rr); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	cfg.Warnings = append(cfg.Warnings,
		field+" is accepted but not served: this adapter serves custom.metrics.k8s.io and external.metrics.k8s.io, not metrics.k8s.io")
	return nil
}

// ruleList decodes a list of rules one at a time so that an error names the
// rule's index.
func ruleList(raw json.RawMessage, field string) ([]Rule, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: must be a list of rules: %w", field, err)
	}
	rules := make([]Rule, len(items))
	for i, item := range items {
		if err := strictUnmarshal(item, &rules[i]); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	return rules, nil
}

// objectFields converts YAML to JSON and splits a mapping into its fields;
// a null document (empty, or only comments) gives nil. The conversion is
// strict: a key given twice at any depth is refused with its line, since
// the JSON that follows would keep only the last (two rules: keys would
// silently drop the first list).
func objectFields(data []byte, field string) (map[string]json.RawMessage, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		if nf := strictyaml.NonFinite(data); nf != nil {
			return nil, fmt.Errorf("%s%w", prefix(field), nf)
		}
		return nil, fmt.Errorf("%sinvalid YAML: %w", prefix(field), err)
	}
	if isNull(js) {
		return nil, nil
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(js, &fields); err != nil {
		return nil, fmt.Errorf("%smust be a mapping: %w", prefix(field), err)
	}
	return fields, nil
}

func onlyFields(fields map[string]json.RawMessage, field string, allowed ...string) error {
	var unknown []string
	for name := range fields {
		if !contains(allowed, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%sunknown field %q (allowed: %s)", prefix(field), unknown[0], strings.Join(allowed, ", "))
}

func strictUnmarshal(raw json.RawMessage, into any) error {
	err := strictyaml.Unmarshal(raw, into)
	if err == nil {
		return nil
	}
	// Keep the decoder's finding ("unknown field ...") without the layers
	// of YAML-to-JSON wrapping around it.
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return errors.New(msg)
}

func prefix(field string) string {
	if field == "" {
		return ""
	}
	return field + ": "
}

func isNull(raw []byte) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
