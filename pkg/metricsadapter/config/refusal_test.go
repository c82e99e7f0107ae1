package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEmptyConfigurationIsRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":        "",
		"blank":        "\n  \n",
		"comment only": "# rules:\n#   - seriesQuery: up\n",
		"null":         "null\n",
		"tilde":        "~\n",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "the configuration is empty") {
			t.Errorf("%s: Parse = %v, want the empty configuration refused", name, err)
		}
	}
}

func TestNoRulesIsReported(t *testing.T) {
	for _, doc := range []string{"rules: []\n", "rules: []\nexternalRules: []\n", "resourceRules: {}\n"} {
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "serves no metrics") {
			t.Errorf("Parse(%q) warnings = %q, want one saying no metrics are served", doc, cfg.Warnings)
		}
	}
}

func TestMalformedPromQLIsRefusedAtLoad(t *testing.T) {
	rule := func(series, query string) string {
		return "rules:\n- seriesQuery: '" + series + "'\n  resources: {template: <<.Resource>>}\n  metricsQuery: '" + query + "'\n"
	}
	good := "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"unclosed brace in seriesQuery", rule(`up{job="x"`, good), []string{"rules[0].seriesQuery", `up{job=\"x\"`, "not a PromQL series selector"}},
		{"expression as seriesQuery", rule(`sum(up)`, good), []string{"rules[0].seriesQuery", "not a PromQL series selector"}},
		{"bad matcher operator", rule(`up{job=="x"}`, good), []string{"rules[0].seriesQuery"}},
		{"unbalanced parenthesis", rule("up", "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>"),
			[]string{"rules[0].metricsQuery", `renders to "sum(series{pod=\"p\"}) by (pod"`, "not valid PromQL"}},
		{"unknown function", rule("up", "avrg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"),
			[]string{"rules[0].metricsQuery", "avrg"}},
		{"range where a vector is needed", rule("up", "sum(<<.Series>>{<<.LabelMatchers>>}[5m]) by (<<.GroupBy>>)"),
			[]string{"rules[0].metricsQuery", "not valid PromQL"}},
		{"bad duration", rule("up", "rate(<<.Series>>{<<.LabelMatchers>>}[5q])"), []string{"rules[0].metricsQuery"}},
		{"external rule", "externalRules:\n- seriesQuery: up\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by ('\n",
			[]string{"externalRules[0].metricsQuery"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("Parse accepted the rule")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestExperimentalPromQLIsAcceptedWithAWarning(t *testing.T) {
	for _, q := range []string{
		"limitk(2, <<.Series>>{<<.LabelMatchers>>})",
		"sort_by_label(<<.Series>>{<<.LabelMatchers>>}, \"pod\")",
	} {
		doc := "rules:\n- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: '" + q + "'\n"
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Errorf("%s: Parse: %v", q, err)
			continue
		}
		if len(cfg.Rules) != 1 || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "rules[0].metricsQuery") ||
			!strings.Contains(cfg.Warnings[0], "experimental") {
			t.Errorf("%s: rules %d, warnings %q; want the rule kept and a warning naming it", q, len(cfg.Rules), cfg.Warnings)
		}
	}
}

func TestDuplicateMetricNamesAreRefused(t *testing.T) {
	custom := func(as string, resources ...string) string {
		var o strings.Builder
		for _, r := range resources {
			o.WriteString(r + "_label: {resource: " + r + "}, ")
		}
		return "- seriesQuery: up\n  resources: {overrides: {" + strings.TrimSuffix(o.String(), ", ") + "}}\n" +
			"  name: {as: " + as + "}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n"
	}
	templated := func(as string) string {
		return "- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  name: {as: " + as + "}\n" +
			"  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n"
	}
	external := func(as string) string {
		return "- seriesQuery: up\n  name: {as: " + as + "}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'\n"
	}
	refused := []struct {
		name, doc, want string
	}{
		{"same name, same resource", "rules:\n" + custom("gpu_util", "namespace", "pod") + custom("gpu_util", "pods"),
			`rules[1].name.as: metric "gpu_util" is also the name rules[0] gives for pod`},
		{"same name, both templated", "rules:\n" + templated("m") + custom("other", "node") + templated("m"),
			`rules[2].name.as: metric "m" is also the name rules[0] gives (both map resources by template)`},
		{"same external name", "externalRules:\n" + external("queue") + external("queue"),
			`externalRules[1].name.as: external metric "queue" is also the name externalRules[0] gives`},
	}
	for _, tc := range refused {
		_, err := Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	accepted := map[string]string{
		"same name, other resources":   "rules:\n" + custom("gpu_util", "namespace", "pod") + custom("gpu_util", "node"),
		"custom and external":          "rules:\n" + custom("q", "pod") + "externalRules:\n" + external("q"),
		"names from the series":        "rules:\n" + templated("'${1}_total'") + templated("'${1}_total'"),
		"different fixed names":        "externalRules:\n" + external("a") + external("b"),
		"template and other overrides": "rules:\n" + templated("m") + custom("m", "node"),
	}
	for name, doc := range accepted {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: Parse: %v", name, err)
		}
	}
}

func TestPrometheusURLErrorsHideCredentials(t *testing.T) {
	_, err := Parse([]byte("prometheus:\n  url: prom.svc://reader:s3cret@prom.svc\n"))
	if err == nil || !strings.Contains(err.Error(), "prometheus.url") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "reader") {
		t.Errorf("error %v: want prometheus.url named and its user information hidden", err)
	}
}

func TestDuplicateKeysAreRefused(t *testing.T) {
	rule := "- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n"
	for name, doc := range map[string]string{
		"top-level rules twice": "rules:\n" + rule + "rules: []\n",
		"metricsQuery twice": "rules:\n" + rule +
			"  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
		"override label twice": "rules:\n- seriesQuery: up\n  resources:\n    overrides:\n      pod: {resource: pod}\n      pod: {resource: node}\n" +
			"  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
		"helm prometheus url twice": "prometheus:\n  url: http://a\n  url: http://b\nrules: {custom: []}\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse([]byte(doc))
			if err == nil {
				t.Fatalf("accepted %q as %+v", doc, cfg)
			}
			if !strings.Contains(err.Error(), "already set") || !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q does not name the repeated key and its line", err)
			}
		})
	}
}

func TestUnboundedTemplatesAreRefusedWithTheirRule(t *testing.T) {
	rule := func(query string) string {
		return "rules:\n- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n" +
			"- seriesQuery: up\n  resources: {template: <<.Resource>>}\n  metricsQuery: '" + query + "'\n"
	}
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"output without end", rule("up<<range 1000000000>> + 1<<end>>"), []string{"rules[1].metricsQuery", "more than 64 KiB"}},
		{"three million terms", rule("up<<range 3000000>> + 1<<end>>"), []string{"rules[1].metricsQuery", "more than 64 KiB"}},
		{"recursion that writes", rule(`<<define "x">>up + <<template "x">><<end>><<template "x">>`), []string{"rules[1].metricsQuery"}},
		{"loop that writes nothing", rule("up<<range 20000000000>><<end>>"), []string{"rules[1].metricsQuery", "ran for over 1s"}},
		{"resource template without end", "rules:\n- seriesQuery: up\n  resources: {template: '<<.Resource>><<range 1000000000>>x<<end>>'}\n  metricsQuery: up\n",
			[]string{"rules[0].resources.template", "more than 64 KiB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse([]byte(tc.doc))
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Parse took %v; the limits should stop it within seconds", took)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("rules: []\n"+strings.Repeat("#", 4<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "over the 4 MiB limit") {
		t.Errorf("a config over 4 MiB: %v; want it refused naming the file and the limit", err)
	}
}

// A NaN or an infinity, which JSON cannot hold, is refused naming its field
// and line, not with the converter's bare "unsupported value".
func TestNonFiniteNumbersNameTheirField(t *testing.T) {
	for doc, want := range map[string]string{
		"prometheus:\n  url: http://p\n  port: .nan\nrules: {custom: []}\n": "prometheus.port: line 3: .nan",
		"rules:\n- seriesQuery: up\n  weight: -.inf\n":                      "rules[0].weight: line 3: -.inf",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want the field and line named (%q)", doc, err, want)
		}
	}
}
