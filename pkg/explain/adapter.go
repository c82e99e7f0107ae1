package explain

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/provider"
)

// AdapterRules answers which rule serves a metric by running the metrics
// adapter's own discovery (pkg/metricsadapter/provider) over the same
// rules and the same Prometheus: the series each rule's seriesQuery lists,
// named and associated with resources, the earlier rule winning a
// conflict, and the metricsQuery rendered for the request.
type AdapterRules struct {
	source string
	mapper apimeta.RESTMapper
	p      *provider.Provider
	// listed is set once every rule's series were listed: the adapter
	// spaces listings on a miss, so explain lists all rules once up front.
	once   sync.Once
	listed error
}

// list lists every rule's series once, as the adapter does at start. A
// failure is kept: answers then come from the rules that listed.
func (a *AdapterRules) list(ctx context.Context) error {
	a.once.Do(func() { a.listed = a.p.Refresh(ctx) })
	return a.listed
}

// AdapterRulesOptions configure AdapterRules.
type AdapterRulesOptions struct {
	// Rules are the adapter's compiled rules.
	Rules *metricsadapter.Rules
	// Source says where they were read, for the answer.
	Source string
	// Prometheus is the adapter's Prometheus.
	Prometheus provider.Prometheus
	// Mapper maps kinds to resources, as the API server does.
	Mapper apimeta.RESTMapper
}

// NewAdapterRules builds AdapterRules.
func NewAdapterRules(o AdapterRulesOptions) (*AdapterRules, error) {
	if o.Rules == nil {
		return nil, errors.New("explain: AdapterRulesOptions.Rules must be set")
	}
	p, err := provider.New(provider.Options{Rules: o.Rules.Custom, ExternalRules: o.Rules.External,
		Prometheus: o.Prometheus, Mapper: o.Mapper, Lister: noObjects{}})
	if err != nil {
		return nil, err
	}
	return &AdapterRules{source: o.Source, mapper: o.Mapper, p: p}, nil
}

// Custom implements RuleFinder.
func (a *AdapterRules) Custom(ctx context.Context, m CustomMetric) (RuleAnswer, error) {
	mapping, err := a.mapper.RESTMapping(m.Kind)
	if err != nil {
		return RuleAnswer{}, fmt.Errorf("kind %s: %w", m.Kind, err)
	}
	info := cmprovider.CustomMetricInfo{GroupResource: mapping.Resource.GroupResource(), Metric: m.Metric,
		Namespaced: mapping.Scope.Name() == apimeta.RESTScopeNameNamespace}
	listErr := a.list(ctx)
	use, err := a.p.CustomRule(ctx, info, m.Namespace, m.Names, m.Selector)
	if err != nil {
		return RuleAnswer{}, a.failure(err, listErr)
	}
	return RuleAnswer{RuleUse: use, Source: a.source}, nil
}

// External implements RuleFinder.
func (a *AdapterRules) External(ctx context.Context, namespace, metric string, selector labels.Selector) (RuleAnswer, error) {
	listErr := a.list(ctx)
	use, err := a.p.ExternalRule(ctx, namespace, metric, selector)
	if err != nil {
		return RuleAnswer{}, a.failure(err, listErr)
	}
	return RuleAnswer{RuleUse: use, Source: a.source}, nil
}

// failure says why no rule was found, and that listing failed if it did.
func (a *AdapterRules) failure(err, listErr error) error {
	if listErr != nil {
		return fmt.Errorf("%v (rules read from %s; listing their series failed: %v)", err, a.source, listErr)
	}
	return fmt.Errorf("%v (rules read from %s)", err, a.source)
}

// noObjects is the object lister explain's provider never calls: it names
// the objects itself.
type noObjects struct{}

func (noObjects) ListNames(context.Context, schema.GroupResource, string, labels.Selector) ([]string, error) {
	return nil, errors.New("explain names the objects itself")
}
