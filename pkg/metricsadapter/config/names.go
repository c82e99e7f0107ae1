package config

import (
	"fmt"
	"sort"
	"strings"
)

// checkNames refuses two rules that give the same metric name to the same
// objects: the adapter could serve only one of them, and which one would
// depend on rule order. Only names fixed by name.as (no $ reference) can be
// compared at load; for custom rules the objects are the resources of
// their overrides, and two rules with templates may map any label to any
// resource, so they overlap. External metrics are named without objects:
// one name, one rule.
func checkNames(cfg *Config) error {
	if err := checkNameList("rules", cfg.Rules, false); err != nil {
		return err
	}
	return checkNameList("externalRules", cfg.ExternalRules, true)
}

func checkNameList(field string, rules []Rule, external bool) error {
	type owner struct {
		index int
		rule  *Rule
	}
	byName := map[string][]owner{}
	for i := range rules {
		name, ok := fixedName(rules[i].Name)
		if !ok {
			continue
		}
		for _, o := range byName[name] {
			if external || overlap(o.rule.Resources, rules[i].Resources) {
				what := "metric"
				if external {
					what = "external metric"
				}
				return fmt.Errorf("%s[%d].name.as: %s %q is also the name %s[%d] gives%s; give each rule its own name or merge them",
					field, i, what, name, field, o.index, sharedResources(o.rule.Resources, rules[i].Resources, external))
			}
		}
		byName[name] = append(byName[name], owner{i, &rules[i]})
	}
	return nil
}

// fixedName is the metric name a rule gives whatever the series, if
// name.as names one without $ references.
func fixedName(n NameMapping) (string, bool) {
	if n.As == "" || strings.Contains(n.As, "$") {
		return "", false // the series name gives the metric's
	}
	return n.As, true
}

// overlap reports whether two custom rules may describe the same resource.
func overlap(a, b ResourceMapping) bool {
	if a.Template != "" && b.Template != "" {
		return true
	}
	return len(commonResources(a, b)) > 0
}

func commonResources(a, b ResourceMapping) []string {
	in := map[string]bool{}
	for _, gr := range a.Overrides {
		in[resourceKey(gr)] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, gr := range b.Overrides {
		k := resourceKey(gr)
		if in[k] && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sharedResources(a, b ResourceMapping, external bool) string {
	if external {
		return ""
	}
	if common := commonResources(a, b); len(common) > 0 {
		return " for " + strings.Join(common, ", ")
	}
	return " (both map resources by template)"
}

// resourceKey makes "pod", "pods" and "Pods" one key; the API server's
// RESTMapper is not at hand when the file is read.
func resourceKey(gr GroupResource) string {
	r := strings.TrimSuffix(strings.ToLower(gr.Resource), "s")
	if gr.Group != "" {
		return r + "." + gr.Group
	}
	return r
}
