package naming

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
)

func compile(t *testing.T, doc string) *Rule {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r, err := Compile("rules[0]", cfg.Rules[0], false)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

const seedRule = `rules:
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

func TestSeedRule(t *testing.T) {
	r := compile(t, seedRule)
	if name, ok := r.MetricName("DCGM_FI_DEV_GPU_UTIL"); !ok || name != "gpu_utilization" {
		t.Errorf("MetricName = %q, %v; want gpu_utilization", name, ok)
	}
	if !r.MayName("gpu_utilization") || r.MayName("other") {
		t.Errorf("MayName: a fixed name must only name itself")
	}
	for label, want := range map[string]schema.GroupResource{
		"exported_pod":       {Resource: "pod"},
		"exported_namespace": {Resource: "namespace"},
	} {
		if got, ok := r.ResourceForLabel(label); !ok || got != want {
			t.Errorf("ResourceForLabel(%q) = %v, %v; want %v", label, got, ok, want)
		}
	}
	for _, label := range []string{"pod", "namespace", "gpu", "UUID"} {
		if gr, ok := r.ResourceForLabel(label); ok {
			t.Errorf("ResourceForLabel(%q) = %v; want no resource without a template", label, gr)
		}
	}
	args := config.QueryArgs{LabelMatchers: `exported_pod="p"`, GroupBy: "exported_pod"}
	got, err := r.RenderQuery(args)
	if err != nil {
		t.Fatal(err)
	}
	want := "avg(DCGM_FI_DEV_GPU_UTIL{" + args.LabelMatchers + "}) by (" + args.GroupBy + ")"
	if got != want {
		t.Errorf("RenderQuery = %q, want %q", got, want)
	}
}

func TestMetricNameMapping(t *testing.T) {
	tests := []struct {
		name, matches, as, series, want string
		ok                              bool
	}{
		{"capture group", "^container_(.*)_seconds_total$", "", "container_cpu_usage_seconds_total", "cpu_usage", true},
		{"no capture group names the match", "requests", "", "http_requests_total", "requests", true},
		{"empty matches keeps the name", "", "", "up", "up", true},
		{"named group", "^(?P<base>.*)_total$", "${base}_per_second", "http_requests_total", "http_requests_per_second", true},
		{"no match", "^node_", "", "up", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compile("rules[0]", config.Rule{
				SeriesQuery: "x", MetricsQuery: "x",
				Name: config.NameMapping{Matches: tc.matches, As: tc.as},
			}, false)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := r.MetricName(tc.series)
			if got != tc.want || ok != tc.ok {
				t.Errorf("MetricName(%q) = %q, %v; want %q, %v", tc.series, got, ok, tc.want, tc.ok)
			}
			if r.MayName("anything") != (tc.as == "" || strings.Contains(tc.as, "$")) {
				t.Errorf("MayName disagrees with name.as %q", tc.as)
			}
		})
	}
}

func TestResourceTemplate(t *testing.T) {
	tests := []struct {
		template, label string
		want            schema.GroupResource
		ok              bool
	}{
		{"<<.Resource>>", "pod", schema.GroupResource{Resource: "pod"}, true},
		{"<<.Resource>>", "namespace", schema.GroupResource{Resource: "namespace"}, true},
		{"kube_<<.Group>>_<<.Resource>>", "kube_apps_deployment", schema.GroupResource{Group: "apps", Resource: "deployment"}, true},
		{"kube_<<.Group>>_<<.Resource>>", "pod", schema.GroupResource{}, false},
		{"k8s.<<.Resource>>", "k8sxpod", schema.GroupResource{}, false}, // the dot is literal
		{"k8s.<<.Resource>>", "k8s.pod", schema.GroupResource{Resource: "pod"}, true},
	}
	for _, tc := range tests {
		r, err := Compile("rules[0]", config.Rule{
			SeriesQuery: "x", MetricsQuery: "x",
			Resources: config.ResourceMapping{
				Template:  tc.template,
				Overrides: map[string]config.GroupResource{"instance": {Resource: "node"}},
			},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.ResourceForLabel(tc.label)
		if got != tc.want || ok != tc.ok {
			t.Errorf("template %q: ResourceForLabel(%q) = %v, %v; want %v, %v", tc.template, tc.label, got, ok, tc.want, tc.ok)
		}
		if got, ok := r.ResourceForLabel("instance"); !ok || got.Resource != "node" {
			t.Errorf("template %q: override lost: %v, %v", tc.template, got, ok)
		}
	}
}

func TestTemplateWithoutResourceIsRefused(t *testing.T) {
	_, err := Compile("rules[4]", config.Rule{
		SeriesQuery: "x", MetricsQuery: "x",
		Resources: config.ResourceMapping{Template: "kube_<<.Group>>"},
	}, false)
	if err == nil || !strings.Contains(err.Error(), "rules[4].resources.template") {
		t.Errorf("Compile error = %v, want one naming rules[4].resources.template", err)
	}
}

func TestSeriesFilters(t *testing.T) {
	r, err := Compile("rules[0]", config.Rule{
		SeriesQuery: "x", MetricsQuery: "x",
		SeriesFilters: []config.RegexFilter{{Is: "^container_"}, {IsNot: "_seconds_total$"}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]bool{
		"container_memory_bytes":            true,
		"container_cpu_usage_seconds_total": false,
		"node_memory_bytes":                 false,
	} {
		if got := r.KeepSeries(series); got != want {
			t.Errorf("KeepSeries(%q) = %v, want %v", series, got, want)
		}
	}
}

func TestRenderQueryAllFields(t *testing.T) {
	r, err := Compile("rules[2]", config.Rule{
		SeriesQuery: "x",
		MetricsQuery: `sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>) / ` +
			`count(<<.Series>>{pod=~"<<index .LabelValuesByName "pod">>"}) by (<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>)`,
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	args := config.QueryArgs{Series: "reqs_total", LabelMatchers: `pod=~"a|b"`, LabelValuesByName: map[string]string{"pod": "a|b"},
		GroupBy: "pod,namespace", GroupBySlice: []string{"pod", "namespace"}}
	got, err := r.RenderQuery(args)
	if err != nil {
		t.Fatal(err)
	}
	want := "sum(rate(" + args.Series + "{" + args.LabelMatchers + "}[2m])) by (" + args.GroupBy + ") / count(" +
		args.Series + `{pod=~"` + args.LabelValuesByName["pod"] + `"}) by (` + strings.Join(args.GroupBySlice, ",") + ")"
	if got != want {
		t.Errorf("RenderQuery =\n %q\nwant\n %q", got, want)
	}
}

// A query that passed the check with one sample object can still grow with
// a request's matchers; its rendering is bounded and the error names the rule.
func TestRenderQueryIsBounded(t *testing.T) {
	r, err := Compile("rules[3]", config.Rule{
		SeriesQuery: "x", MetricsQuery: "sum(x{<<range 200>><<$.LabelMatchers>>,<<end>>})",
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	many := strings.Repeat(`pod=~"`+strings.Repeat("p", 60)+`",`, 1000)
	_, err = r.RenderQuery(config.QueryArgs{Series: "x", LabelMatchers: many})
	if err == nil || !strings.Contains(err.Error(), "rules[3].metricsQuery") || !strings.Contains(err.Error(), "more than 1 MiB") {
		t.Errorf("RenderQuery of a 13 MB query: %v, want it refused naming the rule and the limit", err)
	}
}
