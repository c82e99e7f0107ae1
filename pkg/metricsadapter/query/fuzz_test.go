package query

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzArgs builds a request's template arguments from arbitrary object
// names, namespace and metric selector: whatever they hold (quotes,
// backslashes, newlines, bytes that are not UTF-8), the label matchers must
// read back in Prometheus's parser as the exact values asked for. A
// selector Kubernetes refuses never reaches Args; label names Prometheus
// cannot take unquoted are left out of the check.
func FuzzArgs(f *testing.F) {
	f.Add("gpu-hpa-test-1\ngpu-hpa-test-2", "default", "app=web")
	f.Add("ip-10-0-0-1.ec2.internal", "kube-system", "tier in (gold,silver),!skip")
	f.Add(`a"b`+"\n"+`c\d`, `ns"x`, "gpu!=0")
	f.Add("\xff\xfe", "ns", "")
	f.Add("a|b\n(c)", "n", "x notin (a.b)")
	f.Fuzz(func(t *testing.T, names, namespace, selector string) {
		sel, err := labels.Parse(selector)
		if err != nil {
			return
		}
		list := strings.Split(names, "\n")
		args, err := Args(Request{Series: "s", ObjectLabel: "exported_pod", Names: list,
			NamespaceLabel: "exported_namespace", Namespace: namespace, Selector: sel})
		if err != nil {
			return // Gt and Lt have no matcher
		}
		reqs, _ := sel.Requirements()
		for _, r := range reqs {
			if !model.LegacyValidation.IsValidLabelName(r.Key()) {
				return
			}
		}
		ms, err := parser.ParseMetricSelector("s{" + args.LabelMatchers + "}")
		if err != nil {
			t.Fatalf("LabelMatchers %q do not parse as PromQL: %v", args.LabelMatchers, err)
		}
		for _, m := range ms {
			switch m.Name {
			case "exported_pod":
				for _, n := range list {
					if !m.Matches(n) {
						t.Fatalf("matcher %s does not match the asked name %q", m, n)
					}
				}
			case "exported_namespace":
				if m.Value != namespace {
					t.Fatalf("namespace matcher %s, want value %q", m, namespace)
				}
			}
		}
	})
}
