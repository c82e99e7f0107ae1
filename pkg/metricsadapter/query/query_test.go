package query

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestArgsForPods(t *testing.T) {
	names := []string{"gpu-hpa-test-1", "gpu-hpa-test-2"}
	args, err := Args(Request{
		Series: "DCGM_FI_DEV_GPU_UTIL", ObjectLabel: "exported_pod", Names: names,
		NamespaceLabel: "exported_namespace", Namespace: "default",
	})
	if err != nil {
		t.Fatal(err)
	}
	pattern := strings.Join(names, "|") // the names hold no regexp metacharacters
	wantMatchers := "exported_pod=~" + strconv.Quote(pattern) + ",exported_namespace=" + strconv.Quote("default")
	if args.LabelMatchers != wantMatchers {
		t.Errorf("LabelMatchers = %s, want %s", args.LabelMatchers, wantMatchers)
	}
	if args.GroupBy != "exported_pod" || !reflect.DeepEqual(args.GroupBySlice, []string{"exported_pod"}) {
		t.Errorf("GroupBy = %q %v, want the object label", args.GroupBy, args.GroupBySlice)
	}
	if args.LabelValuesByName["exported_pod"] != pattern || args.LabelValuesByName["exported_namespace"] != "default" {
		t.Errorf("LabelValuesByName = %v", args.LabelValuesByName)
	}
	if args.Series != "DCGM_FI_DEV_GPU_UTIL" {
		t.Errorf("Series = %q", args.Series)
	}
}

func TestArgsSingleNameUsesEquality(t *testing.T) {
	args, err := Args(Request{Series: "s", ObjectLabel: "pod", Names: []string{"web.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `pod="web.1"`; args.LabelMatchers != want {
		t.Errorf("LabelMatchers = %s, want %s", args.LabelMatchers, want)
	}
}

func TestNamesAreQuotedLiterally(t *testing.T) {
	args, err := Args(Request{Series: "s", ObjectLabel: "node", Names: []string{"ip-10-0-0-1.ec2.internal", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// The dot must be escaped for the regexp, and the backslash for the PromQL string.
	if want := `node=~"ip-10-0-0-1\\.ec2\\.internal|b"`; args.LabelMatchers != want {
		t.Errorf("LabelMatchers = %s, want %s", args.LabelMatchers, want)
	}
}

func TestSelectorMatchers(t *testing.T) {
	tests := []struct {
		selector string
		want     []string
	}{
		{"", nil},
		{"queue=jobs", []string{`queue="jobs"`}},
		{"queue!=jobs", []string{`queue!="jobs"`}},
		{"queue in (b,a)", []string{`queue=~"a|b"`}},
		{"queue notin (a)", []string{`queue!~"a"`}},
		{"queue", []string{`queue!=""`}},
		{"!queue", []string{`queue=""`}},
		{"z=1,a=2", []string{`a="2"`, `z="1"`}},
	}
	for _, tc := range tests {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SelectorMatchers(sel)
		if err != nil {
			t.Errorf("SelectorMatchers(%q): %v", tc.selector, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SelectorMatchers(%q) = %v, want %v", tc.selector, got, tc.want)
		}
	}
}

func TestSelectorGreaterThanIsRefused(t *testing.T) {
	sel, err := labels.Parse("gpu>2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SelectorMatchers(sel); err == nil || !strings.Contains(err.Error(), "gpu>2") {
		t.Errorf("error = %v, want one naming the selector", err)
	}
	if _, err := Args(Request{Series: "s", Selector: sel}); err == nil {
		t.Error("Args accepted a selector with no PromQL equivalent")
	}
}

func TestExternalArgs(t *testing.T) {
	sel, err := labels.Parse("queue=jobs,tier in (gold)")
	if err != nil {
		t.Fatal(err)
	}
	args, err := Args(Request{Series: "queue_depth", NamespaceLabel: "namespace", Namespace: "ml", Selector: sel, GroupBy: GroupByLabels(sel)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `namespace="ml",queue="jobs",tier=~"gold"`; args.LabelMatchers != want {
		t.Errorf("LabelMatchers = %s, want %s", args.LabelMatchers, want)
	}
	if args.GroupBy != "queue,tier" {
		t.Errorf("GroupBy = %q, want queue,tier", args.GroupBy)
	}
	empty, err := Args(Request{Series: "queue_depth", GroupBy: GroupByLabels(labels.Everything())})
	if err != nil {
		t.Fatal(err)
	}
	if empty.LabelMatchers != "" || empty.GroupBy != "" || empty.GroupBySlice == nil {
		t.Errorf("no selector: matchers %q, group by %q %v; want empty", empty.LabelMatchers, empty.GroupBy, empty.GroupBySlice)
	}
}

// prometheus-adapter gives a template the metric selector's labels in
// LabelValuesByName, for custom and external rules alike; the object and
// namespace labels win over a selector that names them.
func TestLabelValuesByNameHoldsTheMetricSelector(t *testing.T) {
	sel, err := labels.Parse("queue in (a.b,c),tier=gold,shard,!skip")
	if err != nil {
		t.Fatal(err)
	}
	external, err := Args(Request{Series: "queue_depth", Selector: sel, GroupBy: GroupByLabels(sel),
		NamespaceLabel: "namespace", Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"queue": `a\.b|c`, "tier": "gold", "shard": "", "skip": "", "namespace": "team"}
	if !reflect.DeepEqual(external.LabelValuesByName, want) {
		t.Errorf("external LabelValuesByName = %v, want %v", external.LabelValuesByName, want)
	}
	podSel, _ := labels.Parse("exported_pod=ignored,gpu=0")
	custom, err := Args(Request{Series: "s", ObjectLabel: "exported_pod", Names: []string{"p1", "p2"}, Selector: podSel})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"exported_pod": "p1|p2", "gpu": "0"}; !reflect.DeepEqual(custom.LabelValuesByName, want) {
		t.Errorf("custom LabelValuesByName = %v, want %v", custom.LabelValuesByName, want)
	}
}
