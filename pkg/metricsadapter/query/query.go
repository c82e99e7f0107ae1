// Package query builds the arguments of a rule's metricsQuery for one
// request: the label matchers that pick the requested objects, the
// namespace and the metric selector, and the labels to group by.
package query

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
)

// Request is what a metrics request asks of one rule.
type Request struct {
	// Series is the series name the metric was discovered from.
	Series string
	// ObjectLabel is the series label naming the objects (for example
	// exported_pod); empty for external metrics.
	ObjectLabel string
	// Names are the requested objects' names, one or more.
	Names []string
	// NamespaceLabel is the series label naming the namespace; empty when
	// the query is not limited to a namespace.
	NamespaceLabel string
	// Namespace is the request's namespace.
	Namespace string
	// Selector is the request's metric selector; nil or empty for none.
	Selector labels.Selector
	// GroupBy overrides the grouping labels; by default the object label.
	GroupBy []string
}

// Args builds the template arguments for r. LabelValuesByName holds, as
// prometheus-adapter's does, every label the metric selector names (its
// values joined by "|"; "" for exists and does-not-exist), then the
// namespace and the object label, which win over a selector naming them.
func Args(r Request) (config.QueryArgs, error) {
	// PromQL strings and regular expressions are UTF-8; Kubernetes names
	// always are, so a name that is not was not read from the API server.
	for _, n := range append([]string{r.Namespace}, r.Names...) {
		if !utf8.ValidString(n) {
			return config.QueryArgs{}, fmt.Errorf("object or namespace name %q is not valid UTF-8", n)
		}
	}
	var matchers []string
	values := selectorValues(r.Selector)
	if r.ObjectLabel != "" {
		pattern := namesPattern(r.Names)
		values[r.ObjectLabel] = pattern
		if len(r.Names) == 1 {
			matchers = append(matchers, matcher(r.ObjectLabel, "=", r.Names[0]))
		} else {
			matchers = append(matchers, matcher(r.ObjectLabel, "=~", pattern))
		}
	}
	if r.NamespaceLabel != "" {
		values[r.NamespaceLabel] = regexp.QuoteMeta(r.Namespace)
		matchers = append(matchers, matcher(r.NamespaceLabel, "=", r.Namespace))
	}
	selectorMatchers, err := SelectorMatchers(r.Selector)
	if err != nil {
		return config.QueryArgs{}, err
	}
	matchers = append(matchers, selectorMatchers...)
	groupBy := r.GroupBy
	if groupBy == nil && r.ObjectLabel != "" {
		groupBy = []string{r.ObjectLabel}
	}
	return config.QueryArgs{
		Series:            r.Series,
		LabelMatchers:     strings.Join(matchers, ","),
		LabelValuesByName: values,
		GroupBy:           strings.Join(groupBy, ","),
		GroupBySlice:      groupBy,
	}, nil
}

// SelectorMatchers turns a Kubernetes label selector into PromQL label
// matchers, sorted by label. Gt and Lt have no PromQL matcher and are
// refused.
func SelectorMatchers(sel labels.Selector) ([]string, error) {
	if sel == nil || sel.Empty() {
		return nil, nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, fmt.Errorf("metric selector %q cannot be expressed as label matchers", sel)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Key() < reqs[j].Key() })
	out := make([]string, 0, len(reqs))
	for _, req := range reqs {
		vals := req.Values().List() // sorted
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals:
			out = append(out, matcher(req.Key(), "=", vals[0]))
		case selection.NotEquals:
			out = append(out, matcher(req.Key(), "!=", vals[0]))
		case selection.In:
			out = append(out, matcher(req.Key(), "=~", namesPattern(vals)))
		case selection.NotIn:
			out = append(out, matcher(req.Key(), "!~", namesPattern(vals)))
		case selection.Exists:
			out = append(out, matcher(req.Key(), "!=", ""))
		case selection.DoesNotExist:
			out = append(out, matcher(req.Key(), "=", ""))
		default:
			return nil, fmt.Errorf("metric selector %q: operator %q has no PromQL equivalent", sel, req.Operator())
		}
	}
	return out, nil
}

// selectorValues maps each label the selector names to its values as an
// alternation of literals.
func selectorValues(sel labels.Selector) map[string]string {
	values := map[string]string{}
	if sel == nil || sel.Empty() {
		return values
	}
	reqs, _ := sel.Requirements()
	for _, req := range reqs {
		values[req.Key()] = namesPattern(req.Values().List())
	}
	return values
}

// GroupByLabels is the grouping of an external query: the labels the
// metric selector names, sorted, so that each selected combination comes
// back as its own value.
func GroupByLabels(sel labels.Selector) []string {
	if sel == nil || sel.Empty() {
		return []string{}
	}
	reqs, _ := sel.Requirements()
	seen := map[string]bool{}
	var out []string
	for _, req := range reqs {
		if !seen[req.Key()] {
			seen[req.Key()] = true
			out = append(out, req.Key())
		}
	}
	sort.Strings(out)
	return out
}

// namesPattern is an anchored-by-PromQL alternation of literal values.
func namesPattern(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(quoted, "|")
}

func matcher(label, op, value string) string {
	return label + op + strconv.Quote(value)
}
