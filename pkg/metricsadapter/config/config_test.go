package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/examples"
)

// seedRule is the same rule in prometheus-adapter's own config file form.
const seedRules = `rules:
- seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}'
  resources:
    overrides:
      exported_namespace:
        resource: namespace
      exported_pod:
        resource: pod
  name:
    matches: "^(.*)$"
    as: "gpu_utilization"
  metricsQuery: 'avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

func wantSeedRule() Rule {
	return Rule{
		SeriesQuery: `DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}`,
		Resources: ResourceMapping{Overrides: map[string]GroupResource{
			"exported_namespace": {Resource: "namespace"},
			"exported_pod":       {Resource: "pod"},
		}},
		Name:         NameMapping{Matches: "^(.*)$", As: "gpu_utilization"},
		MetricsQuery: `avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)`,
	}
}

func TestParseSeedHelmValues(t *testing.T) {
	cfg, err := Parse([]byte(examples.GPUUtilizationAdapterValues))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if want := "http://prometheus-kube-prometheus-prometheus.monitoring.svc:9090"; cfg.PrometheusURL != want {
		t.Errorf("PrometheusURL = %q, want %q", cfg.PrometheusURL, want)
	}
	if !reflect.DeepEqual(cfg.Rules, []Rule{wantSeedRule()}) {
		t.Errorf("Rules = %+v, want %+v", cfg.Rules, wantSeedRule())
	}
	if len(cfg.ExternalRules) != 0 || len(cfg.Warnings) != 0 {
		t.Errorf("ExternalRules = %v, Warnings = %v; want none", cfg.ExternalRules, cfg.Warnings)
	}
}

func TestParseSeedPlainForm(t *testing.T) {
	cfg, err := Parse([]byte(seedRules))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.PrometheusURL != "" {
		t.Errorf("PrometheusURL = %q, want empty in the plain form", cfg.PrometheusURL)
	}
	if !reflect.DeepEqual(cfg.Rules, []Rule{wantSeedRule()}) {
		t.Errorf("Rules = %+v, want %+v", cfg.Rules, wantSeedRule())
	}
}

func TestParseFullPlainForm(t *testing.T) {
	const doc = `rules:
- seriesQuery: '{__name__=~"^container_.*",namespace!="",pod!=""}'
  seriesFilters:
  - isNot: ^container_.*_seconds_total$
  - is: ^container_
  resources:
    template: <<.Resource>>
  name:
    matches: ^container_(.*)_total$
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
    namespaced: false
  name: {as: queue_depth_total}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)
resourceRules:
  cpu:
    containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[3m])) by (<<.GroupBy>>)
    nodeQuery: sum(rate(node_cpu_seconds_total{<<.LabelMatchers>>}[3m])) by (<<.GroupBy>>)
    resources:
      overrides:
        node: {resource: node}
    containerLabel: container
  window: 3m
`
	cfg, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Rules) != 1 || len(cfg.ExternalRules) != 1 {
		t.Fatalf("got %d rules and %d external rules, want 1 and 1", len(cfg.Rules), len(cfg.ExternalRules))
	}
	r := cfg.Rules[0]
	if want := []RegexFilter{{IsNot: "^container_.*_seconds_total$"}, {Is: "^container_"}}; !reflect.DeepEqual(r.SeriesFilters, want) {
		t.Errorf("SeriesFilters = %v, want %v", r.SeriesFilters, want)
	}
	if r.Resources.Template != "<<.Resource>>" {
		t.Errorf("Template = %q", r.Resources.Template)
	}
	ns := cfg.ExternalRules[0].Resources.Namespaced
	if ns == nil || *ns {
		t.Errorf("external namespaced = %v, want false", ns)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "resourceRules") {
		t.Errorf("Warnings = %v, want one about resourceRules", cfg.Warnings)
	}
}

func TestParseHelmVariants(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantURL string
		warns   int
	}{
		// Each of these lists no rule, which is reported too.
		{"port as string and path", "prometheus:\n  url: http://prom.svc/\n  port: \"9090\"\n  path: /sub\n", "http://prom.svc:9090/sub", 1},
		{"no port", "prometheus:\n  url: https://prom.example\n", "https://prom.example", 1},
		{"rules mapping without prometheus", "rules:\n  default: false\n  custom: []\n", "", 1},
		{"default true is reported", "rules:\n  default: true\n", "", 2},
		{"external rules", "rules:\n  external:\n  - seriesQuery: up\n    metricsQuery: sum(<<.Series>>)\n", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.PrometheusURL != tc.wantURL {
				t.Errorf("PrometheusURL = %q, want %q", cfg.PrometheusURL, tc.wantURL)
			}
			if len(cfg.Warnings) != tc.warns {
				t.Errorf("Warnings = %v, want %d", cfg.Warnings, tc.warns)
			}
		})
	}
}

func TestParseErrorsNameRuleAndField(t *testing.T) {
	good := "- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: sum(<<.Series>>)\n"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown top-level field", "rules: []\nrulez: []\n", []string{`unknown field "rulez"`}},
		{"unknown rule field", "rules:\n" + good + "- seriesQuery: up\n  metricQuery: x\n", []string{"rules[1]", "metricQuery"}},
		{"rule field in another case", "rules:\n- seriesQuerY: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: x\n",
			[]string{"rules[0]", `unknown field "seriesQuerY"`}},
		{"resource template without the resource", "rules:\n- seriesQuery: up\n  resources: {template: pod}\n  metricsQuery: x\n",
			[]string{"rules[0].resources.template", "must use <<.Resource>>"}},
		{"unknown helm rule field", "prometheus: {url: http://p}\nrules:\n  custom:\n  - seriesQuery: up\n    nmae: {}\n", []string{"rules.custom[0]", "nmae"}},
		{"unknown helm rules key", "rules:\n  customs: []\n", []string{"rules", `"customs"`}},
		{"unknown prometheus key", "prometheus: {url: http://p, host: x}\n", []string{"prometheus", "host"}},
		{"bad metrics template", "rules:\n" + good + good + "- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: sum(<<.Series)\n",
			[]string{"rules[2].metricsQuery"}},
		{"unknown template field", "rules:\n- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: sum(<<.Serie>>)\n",
			[]string{"rules[0].metricsQuery", "Serie"}},
		{"bad resource template", "rules:\n- seriesQuery: up\n  resources: {template: <<.Kind>>}\n  metricsQuery: x\n",
			[]string{"rules[0].resources.template", "Kind"}},
		{"bad name regex", "externalRules:\n- seriesQuery: up\n  name: {matches: '(('}\n  metricsQuery: x\n",
			[]string{"externalRules[0].name.matches", "(("}},
		{"bad filter regex", "rules:\n- seriesQuery: up\n  seriesFilters: [{isNot: '['}]\n  resources: {template: <<.Resource>>}\n  metricsQuery: x\n",
			[]string{"rules[0].seriesFilters[0].isNot"}},
		{"empty filter", "rules:\n- seriesQuery: up\n  seriesFilters: [{}]\n  resources: {template: <<.Resource>>}\n  metricsQuery: x\n",
			[]string{"rules[0].seriesFilters[0]"}},
		{"missing seriesQuery", "rules:\n- metricsQuery: x\n  resources: {template: <<.Resource>>}\n", []string{"rules[0].seriesQuery"}},
		{"missing metricsQuery", "rules:\n- seriesQuery: up\n  resources: {template: <<.Resource>>}\n", []string{"rules[0].metricsQuery"}},
		{"no resources", "rules:\n- seriesQuery: up\n  metricsQuery: x\n", []string{"rules[0].resources"}},
		{"override without resource", "rules:\n- seriesQuery: up\n  resources: {overrides: {pod: {group: x}}}\n  metricsQuery: x\n",
			[]string{"rules[0].resources.overrides.pod.resource"}},
		{"wrong type", "rules:\n- seriesQuery: [a]\n", []string{"rules[0]"}},
		{"rules not a list", "rules: 3\n", []string{"rules"}},
		{"existing configmap", "rules:\n  existing: my-config\n", []string{"rules.existing", "my-config"}},
		{"bad port", "prometheus: {url: http://p, port: 99999}\n", []string{"prometheus.port", "99999"}},
		{"url without scheme", "prometheus: {url: prom.svc}\n", []string{"prometheus.url", "prom.svc"}},
		{"bad resource rules", "resourceRules: {cpu: {containerQueryy: x}}\n", []string{"resourceRules", "containerQueryy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("Parse accepted the document, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadNamesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "adapter.yaml")
	if err := os.WriteFile(path, []byte(examples.GPUUtilizationAdapterValues), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || len(cfg.Rules) != 1 {
		t.Fatalf("Load = %v, %v", cfg, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) error = %v, want one naming the file", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules: [{seriesQuery: up, x: 1}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("Load(bad) error = %v, want one naming the file", err)
	}
}
