package config_test

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/examples"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
)

// FuzzParse feeds the rules reader arbitrary documents. It must never
// panic; whatever it accepts must compile into serving rules (the
// validator and the compiler must agree, or a configuration accepted at
// start would fail on the first request) and must have no key given twice
// (the JSON it becomes would silently keep the last).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		examples.GPUUtilizationAdapterValues,
		"rules:\n- seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_namespace!=\"\",exported_pod!=\"\"}'\n  resources:\n    overrides:\n      exported_namespace: {resource: namespace}\n      exported_pod: {resource: pod}\n  name: {matches: \"^(.*)$\", as: gpu_utilization}\n  metricsQuery: 'avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
		"rules:\n- seriesQuery: '{__name__=~\"^container_.*\",namespace!=\"\",pod!=\"\"}'\n  seriesFilters: [{isNot: ^container_.*_seconds_total$}]\n  resources: {template: <<.Resource>>}\n  name: {matches: ^container_(.*)_total$}\n  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)\n",
		"externalRules:\n- seriesQuery: 'queue_depth{queue!=\"\"}'\n  resources: {overrides: {namespace: {resource: namespace}}, namespaced: false}\n  name: {as: queue_depth_total}\n  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)\n",
		"prometheus: {url: http://p, port: 9090, path: /x}\nrules: {default: true, custom: [], external: []}\n",
		"rules:\n- seriesQuery: up\n  resources: {template: '<<.Group>>_<<.Resource>>'}\n  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
		"rules: []\n", "", "null", "# nothing\n", "rules: 3\n", "{", "rules:\n- seriesQuery: up{\n",
		"resourceRules: {cpu: {containerQuery: x}}\n",
		// Keys given twice, at the top and inside a rule.
		"rules: []\nrules: []\n",
		"rules:\n- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n  metricsQuery: up\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data)
		if err != nil {
			return
		}
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			t.Fatalf("accepted a document the strict reader refuses: %v\n%s", err, data)
		}
		for i, r := range cfg.Rules {
			if _, err := naming.Compile(fmt.Sprintf("rules[%d]", i), r, false); err != nil {
				t.Fatalf("accepted rule does not compile: %v\n%s", err, data)
			}
		}
		for i, r := range cfg.ExternalRules {
			if _, err := naming.Compile(fmt.Sprintf("externalRules[%d]", i), r, true); err != nil {
				t.Fatalf("accepted external rule does not compile: %v\n%s", err, data)
			}
		}
	})
}

// FuzzTemplate renders arbitrary metricsQuery templates with the sample
// arguments through the bounded renderer: parsing and executing a template
// must fail cleanly, never panic, stay within the output limit and finish
// within the time limit (the renderer abandons it), and a template that
// renders must render the same twice.
func FuzzTemplate(f *testing.F) {
	for _, seed := range []string{
		"avg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
		"sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)",
		"<<index .LabelValuesByName \"pod\">>", "<<index .GroupBySlice 5>>", "<<.Nope>>", "<<", "<<template \"x\">>",
		"<<define \"x\">><<template \"x\">><<end>><<template \"x\">>", "<<len .Series>>", "<<printf \"%d\" 1>>",
		// Output without bound.
		"up<<range 1000000000>> + 1<<end>>", "up<<range 3000000>> + 1<<end>>",
		"<<define \"x\">>up + <<template \"x\">><<end>><<template \"x\">>",
	} {
		f.Add(seed)
	}
	args := config.QueryArgs{Series: "s", LabelMatchers: `pod="p"`, LabelValuesByName: map[string]string{"pod": "p"},
		GroupBy: "pod", GroupBySlice: []string{"pod"}}
	lim := config.CheckLimits()
	f.Fuzz(func(t *testing.T, text string) {
		tpl, err := config.NewTemplate("fuzz", text)
		if err != nil {
			return
		}
		start := time.Now()
		a, err := config.Render(tpl, args, lim)
		if took := time.Since(start); took > lim.Timeout+time.Second {
			t.Fatalf("template %q rendered in %v, over the %v limit", text, took, lim.Timeout)
		}
		if err != nil {
			return
		}
		if len(a) > lim.MaxBytes {
			t.Fatalf("template %q rendered %d bytes, over the %d limit", text, len(a), lim.MaxBytes)
		}
		if b, _ := config.Render(tpl, args, lim); a != b {
			t.Fatalf("template %q rendered %q, then %q", text, a, b)
		}
	})
}
