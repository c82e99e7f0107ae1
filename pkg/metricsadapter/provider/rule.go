package provider

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/query"
)

// RuleUse is the rule that serves a metric and the PromQL a request for it
// runs, as the provider would run it.
type RuleUse struct {
	// Rule names the rule: "rules[0]", "externalRules[1]".
	Rule string `json:"rule"`
	// SeriesQuery is the rule's seriesQuery; Series the series the metric
	// was discovered from.
	SeriesQuery string `json:"seriesQuery"`
	Series      string `json:"series"`
	// ObjectLabel and NamespaceLabel are the series labels naming the
	// object and its namespace (empty when the query is not limited to
	// one).
	ObjectLabel    string `json:"objectLabel,omitempty"`
	NamespaceLabel string `json:"namespaceLabel,omitempty"`
	// Query is the rendered metricsQuery.
	Query string `json:"query"`
}

// CustomRule says which rule serves a custom metric and the query a
// request for the named objects runs, discovering the metric if it is not
// known yet. It runs no query. Errors are the API errors a request would
// get (404 for an unknown metric).
func (p *Provider) CustomRule(ctx context.Context, info cmprovider.CustomMetricInfo, namespace string, names []string,
	metricSelector labels.Selector) (RuleUse, error) {
	e, err := p.customEntry(ctx, info)
	if err != nil {
		return RuleUse{}, err
	}
	req := customRequest(e, info, namespace, names, metricSelector)
	return ruleUse(e.rule.ID, e.rule.SeriesQuery, req, e.rule.RenderQuery)
}

// ExternalRule is CustomRule for an external metric.
func (p *Provider) ExternalRule(ctx context.Context, namespace, metric string, metricSelector labels.Selector) (RuleUse, error) {
	e, err := p.externalEntry(ctx, metric)
	if err != nil {
		return RuleUse{}, err
	}
	req := externalRequest(e, namespace, metricSelector)
	return ruleUse(e.rule.ID, e.rule.SeriesQuery, req, e.rule.RenderQuery)
}

func ruleUse(id, seriesQuery string, req query.Request, render func(config.QueryArgs) (string, error)) (RuleUse, error) {
	args, err := query.Args(req)
	if err != nil {
		return RuleUse{}, err
	}
	q, err := render(args)
	if err != nil {
		return RuleUse{}, err
	}
	return RuleUse{Rule: id, SeriesQuery: seriesQuery, Series: req.Series, ObjectLabel: req.ObjectLabel,
		NamespaceLabel: req.NamespaceLabel, Query: q}, nil
}

// customRequest is what a request for names asks of the entry's rule.
func customRequest(e customEntry, info cmprovider.CustomMetricInfo, namespace string, names []string,
	metricSelector labels.Selector) query.Request {
	req := query.Request{Series: e.series, ObjectLabel: e.objectLabel, Names: names, Selector: metricSelector}
	if info.Namespaced && e.namespaceLabel != "" {
		req.NamespaceLabel, req.Namespace = e.namespaceLabel, namespace
	}
	return req
}

// externalRequest is what an external request asks of the entry's rule.
func externalRequest(e externalEntry, namespace string, metricSelector labels.Selector) query.Request {
	req := query.Request{Series: e.series, Selector: metricSelector, GroupBy: query.GroupByLabels(metricSelector)}
	if e.namespaceLabel != "" {
		req.NamespaceLabel, req.Namespace = e.namespaceLabel, namespace
	}
	return req
}
