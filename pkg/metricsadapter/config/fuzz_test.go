package config_test

import (
	"fmt"
	"testing"

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
// arguments: parsing and executing a template must fail cleanly, never
// panic, and a template that renders must render the same twice.
func FuzzTemplate(f *testing.F) {
	for _, seed := range []string{
		"avg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
		"sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)",
		"<<index .LabelValuesByName \"pod\">>", "<<index .GroupBySlice 5>>", "<<.Nope>>", "<<", "<<template \"x\">>",
		"<<define \"x\">><<template \"x\">><<end>><<template \"x\">>", "<<len .Series>>", "<<printf \"%d\" 1>>",
	} {
		f.Add(seed)
	}
	args := config.QueryArgs{Series: "s", LabelMatchers: `pod="p"`, LabelValuesByName: map[string]string{"pod": "p"},
		GroupBy: "pod", GroupBySlice: []string{"pod"}}
	f.Fuzz(func(t *testing.T, text string) {
		tpl, err := config.NewTemplate("fuzz", text)
		if err != nil {
			return
		}
		var a, b limitedWriter
		if tpl.Execute(&a, args) != nil {
			return
		}
		_ = tpl.Execute(&b, args)
		if a.String() != b.String() {
			t.Fatalf("template %q rendered %q, then %q", text, a.String(), b.String())
		}
	})
}

// limitedWriter stops a template that writes without end (recursion).
type limitedWriter struct{ buf []byte }

func (w *limitedWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > 1<<20 {
		return 0, fmt.Errorf("template output over 1 MiB")
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *limitedWriter) String() string { return string(w.buf) }
