package provider

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/model"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/naming"
)

// customEntry is what serving one custom metric needs: the rule, the series
// and the labels that name the object and its namespace.
type customEntry struct {
	rule           *naming.Rule
	series         string
	objectLabel    string
	namespaceLabel string
}

// externalEntry is what serving one external metric needs.
type externalEntry struct {
	rule           *naming.Rule
	series         string
	namespaceLabel string
}

// ruleResult is one rule's latest discovery.
type ruleResult struct {
	custom   map[cmprovider.CustomMetricInfo]customEntry
	external map[string]externalEntry
}

// registry knows which metrics exist. It lists series for every rule on an
// interval and, on a lookup of an unknown metric, again at once for the
// rules that could name it, so a new metric is served without waiting for
// the next relist.
type registry struct {
	rules  []*naming.Rule // custom rules, then external rules
	prom   Prometheus
	mapper apimeta.RESTMapper
	clock  clock.PassiveClock
	maxAge time.Duration
	// minMissInterval spaces refreshes triggered by lookups, so repeated
	// requests for a metric that does not exist cannot flood Prometheus.
	minMissInterval time.Duration
	log             logr.Logger
	metrics         *Metrics

	refreshMu    sync.Mutex // serializes refreshes
	lastMiss     time.Time  // under refreshMu
	results      []ruleResult
	generation   atomic.Uint64
	mu           sync.RWMutex // guards the fields below
	custom       map[cmprovider.CustomMetricInfo]customEntry
	external     map[string]externalEntry
	customList   []cmprovider.CustomMetricInfo
	externalList []cmprovider.ExternalMetricInfo
}

func newRegistry(o Options) *registry {
	rules := append(append([]*naming.Rule{}, o.Rules...), o.ExternalRules...)
	return &registry{
		rules: rules, prom: o.Prometheus, mapper: o.Mapper, clock: o.Clock, maxAge: o.MetricsMaxAge,
		minMissInterval: o.MinRediscoverInterval, log: o.Logger, metrics: o.Metrics,
		results:  make([]ruleResult, len(rules)),
		custom:   map[cmprovider.CustomMetricInfo]customEntry{},
		external: map[string]externalEntry{},
	}
}

// refreshAll lists series for every rule. A rule whose listing fails keeps
// its previous metrics; the first error is returned.
func (r *registry) refreshAll(ctx context.Context) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	return r.refresh(ctx, func(*naming.Rule) bool { return true }, "relist")
}

// discoverOnMiss refreshes the rules that could name metric, unless a
// refresh finished while this caller waited or one ran too recently.
func (r *registry) discoverOnMiss(ctx context.Context, metric string, external bool) error {
	seen := r.generation.Load()
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	if r.generation.Load() != seen {
		return nil
	}
	now := r.clock.Now()
	if !r.lastMiss.IsZero() && now.Sub(r.lastMiss) < r.minMissInterval {
		return nil
	}
	r.lastMiss = now
	return r.refresh(ctx, func(rule *naming.Rule) bool {
		return rule.External == external && rule.MayName(metric)
	}, "miss")
}

// refresh must be called with refreshMu held.
func (r *registry) refresh(ctx context.Context, want func(*naming.Rule) bool, trigger string) error {
	var firstErr error
	now := r.clock.Now()
	for i, rule := range r.rules {
		if !want(rule) {
			continue
		}
		res, err := r.discover(ctx, rule, now)
		if err != nil {
			r.log.Error(err, "listing series failed; keeping the rule's previous metrics", "rule", rule.ID)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", rule.ID, err)
			}
			continue
		}
		r.results[i] = res
	}
	r.rebuild()
	r.generation.Add(1)
	r.metrics.discovery(trigger, firstErr)
	return firstErr
}

// discover lists one rule's series and names its metrics.
func (r *registry) discover(ctx context.Context, rule *naming.Rule, now time.Time) (ruleResult, error) {
	sets, err := r.prom.Series(ctx, rule.SeriesQuery, now.Add(-r.maxAge), now)
	if err != nil {
		return ruleResult{}, err
	}
	res := ruleResult{custom: map[cmprovider.CustomMetricInfo]customEntry{}, external: map[string]externalEntry{}}
	resolved := map[schema.GroupResource]resolvedResource{}
	for _, set := range distinctShapes(sets) {
		series := string(set[model.MetricNameLabel])
		if series == "" || !rule.KeepSeries(series) {
			continue
		}
		metric, ok := rule.MetricName(series)
		if !ok {
			continue
		}
		labels := r.resourceLabels(rule, set, resolved)
		nsLabel := labels[namespacesResource]
		if rule.External {
			if _, dup := res.external[metric]; !dup {
				e := externalEntry{rule: rule, series: series}
				if rule.Namespaced {
					e.namespaceLabel = nsLabel
				}
				res.external[metric] = e
			}
			continue
		}
		for gr, label := range labels {
			info := cmprovider.CustomMetricInfo{GroupResource: gr, Metric: metric, Namespaced: resolved[gr].namespaced}
			if _, dup := res.custom[info]; dup {
				continue
			}
			e := customEntry{rule: rule, series: series, objectLabel: label}
			if info.Namespaced {
				e.namespaceLabel = nsLabel
			}
			res.custom[info] = e
		}
	}
	return res, nil
}

// resolvedResource is a rule's resource as the API server names it.
type resolvedResource struct {
	gr         schema.GroupResource
	namespaced bool
	ok         bool
}

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// resourceLabels maps the resources a series' labels stand for to those
// labels, resources normalized by the RESTMapper ("pod" -> "pods").
// Labels that name no known resource are left out.
func (r *registry) resourceLabels(rule *naming.Rule, set model.LabelSet, cache map[schema.GroupResource]resolvedResource) map[schema.GroupResource]string {
	out := map[schema.GroupResource]string{}
	for _, label := range sortedLabelNames(set) {
		raw, ok := rule.ResourceForLabel(label)
		if !ok {
			continue
		}
		res, seen := cache[raw]
		if !seen {
			res = r.resolve(raw)
			cache[raw] = res
			cache[res.gr] = res
		}
		if !res.ok {
			continue
		}
		if _, dup := out[res.gr]; !dup {
			out[res.gr] = label
		}
	}
	return out
}

func (r *registry) resolve(raw schema.GroupResource) resolvedResource {
	gvr, err := r.mapper.ResourceFor(raw.WithVersion(""))
	if err != nil {
		return resolvedResource{gr: raw}
	}
	res := resolvedResource{gr: gvr.GroupResource(), ok: true}
	if gvk, err := r.mapper.KindFor(gvr); err == nil {
		if m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			res.namespaced = m.Scope.Name() == apimeta.RESTScopeNameNamespace
		}
	}
	return res
}

// rebuild merges the rules' results; on a conflict the earlier rule wins.
func (r *registry) rebuild() {
	custom := map[cmprovider.CustomMetricInfo]customEntry{}
	external := map[string]externalEntry{}
	for _, res := range r.results {
		for info, e := range res.custom {
			if _, dup := custom[info]; !dup {
				custom[info] = e
			}
		}
		for name, e := range res.external {
			if _, dup := external[name]; !dup {
				external[name] = e
			}
		}
	}
	customList := make([]cmprovider.CustomMetricInfo, 0, len(custom))
	for info := range custom {
		customList = append(customList, info)
	}
	sort.Slice(customList, func(i, j int) bool { return customList[i].String() < customList[j].String() })
	externalList := make([]cmprovider.ExternalMetricInfo, 0, len(external))
	for name := range external {
		externalList = append(externalList, cmprovider.ExternalMetricInfo{Metric: name})
	}
	sort.Slice(externalList, func(i, j int) bool { return externalList[i].Metric < externalList[j].Metric })

	r.mu.Lock()
	r.custom, r.external, r.customList, r.externalList = custom, external, customList, externalList
	r.mu.Unlock()
	r.metrics.knownMetrics(len(customList), len(externalList))
}

func (r *registry) lookupCustom(info cmprovider.CustomMetricInfo) (customEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.custom[info]
	return e, ok
}

func (r *registry) lookupExternal(metric string) (externalEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.external[metric]
	return e, ok
}

func (r *registry) listCustom() []cmprovider.CustomMetricInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]cmprovider.CustomMetricInfo(nil), r.customList...)
}

func (r *registry) listExternal() []cmprovider.ExternalMetricInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]cmprovider.ExternalMetricInfo(nil), r.externalList...)
}

// distinctShapes keeps one series per (name, label names): the values of
// the labels do not change which metrics a series yields. The result is
// sorted so that discovery is deterministic.
func distinctShapes(sets []model.LabelSet) []model.LabelSet {
	type shaped struct {
		set       model.LabelSet
		key, full string
	}
	all := make([]shaped, len(sets))
	for i, set := range sets {
		key := string(set[model.MetricNameLabel])
		for _, l := range sortedLabelNames(set) {
			key += "\x00" + l
		}
		all[i] = shaped{set: set, key: key, full: set.String()}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].full < all[j].full })
	seen := make(map[string]bool, 8)
	var out []model.LabelSet
	for _, s := range all {
		if !seen[s.key] {
			seen[s.key] = true
			out = append(out, s.set)
		}
	}
	return out
}

func sortedLabelNames(set model.LabelSet) []string {
	names := make([]string, 0, len(set))
	for l := range set {
		if l != model.MetricNameLabel {
			names = append(names, string(l))
		}
	}
	sort.Strings(names)
	return names
}
