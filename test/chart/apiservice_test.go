package chart_test

import (
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// servesAPI tells whether the adapter's mounted configuration has rules for
// a metrics API group: rules for custom.metrics.k8s.io, externalRules for
// external.metrics.k8s.io.
func servesAPI(t *testing.T, objs objects, deployment, configPath, group string) bool {
	t.Helper()
	var cfg struct {
		Rules         []map[string]any `json:"rules"`
		ExternalRules []map[string]any `json:"externalRules"`
	}
	if err := yaml.Unmarshal([]byte(mountedFile(t, objs, deployment, configPath)), &cfg); err != nil {
		t.Fatalf("adapter --config=%s: %v", configPath, err)
	}
	if group == "external.metrics.k8s.io" {
		return len(cfg.ExternalRules) > 0
	}
	return len(cfg.Rules) > 0
}

// apiServices are the names of the rendered APIServices, sorted.
func apiServices(objs objects) []string {
	var out []string
	for _, u := range objs.ofKind("APIService") {
		out = append(out, u.GetName())
	}
	sort.Strings(out)
	return out
}

// TestAPIServicesFollowRules: each metrics API is registered only when the
// adapter has rules for it, so external.metrics.k8s.io stays free for KEDA
// unless external rules are given, and custom.metrics.k8s.io stays with an
// existing prometheus-adapter when only external rules are.
func TestAPIServicesFollowRules(t *testing.T) {
	externalRule := `metricsAdapter.rules.external[0].seriesQuery=queue_depth,metricsAdapter.rules.external[0].metricsQuery=sum(queue_depth)`
	cases := []struct {
		name string
		set  []string
		want string
	}{
		{"custom rules only (the default)", nil, "v1beta1.custom.metrics.k8s.io v1beta2.custom.metrics.k8s.io"},
		{"custom and external rules", []string{externalRule},
			"v1beta1.custom.metrics.k8s.io v1beta1.external.metrics.k8s.io v1beta2.custom.metrics.k8s.io"},
		{"external rules only", []string{externalRule, "metricsAdapter.rules.custom=null"}, "v1beta1.external.metrics.k8s.io"},
		{"adapter off", []string{"metricsAdapter.enabled=false"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			objs := render(t, "", args...)
			if got := strings.Join(apiServices(objs), " "); got != c.want {
				t.Errorf("APIServices %q, want %q", got, c.want)
			}
			if objs[key("Deployment", namespace, adapterName)] != nil {
				checkAdapter(t, objs)
			}
		})
	}

	// No rules at all would serve nothing: refused, naming the value.
	_, err := helm(t, templateArgs("", "--set", "metricsAdapter.rules.custom=null")...)
	if err == nil || !strings.Contains(err.Error(), "metricsAdapter.rules: no custom or external rules") {
		t.Errorf("adapter without rules: err %v", err)
	}
}
