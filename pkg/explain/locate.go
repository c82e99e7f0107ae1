package explain

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

// AdapterConfigKey is the key of the rules in the adapter's ConfigMap, in
// gpuscale's chart and in prometheus-adapter's.
const AdapterConfigKey = "config.yaml"

// apiServiceResource is the APIService resource of the aggregation layer.
var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// LocatorOptions say where to find the metrics adapter's rules and its
// Prometheus.
type LocatorOptions struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  apimeta.RESTMapper
	// ConfigFile is --adapter-config: the adapter's rules in either of its
	// forms. Empty finds them in the cluster (see AdapterLocator).
	ConfigFile string
	// PrometheusURL is --prometheus-url; empty takes the config's
	// prometheus.url or the adapter Deployment's --prometheus-url.
	PrometheusURL string
	// Transport, with ProxyHost, reaches a Prometheus given by an
	// in-cluster service name (NAME.NAMESPACE.svc...) through the API
	// server's service proxy, as kubectl proxy would; nil calls
	// Prometheus directly.
	Transport http.RoundTripper
	ProxyHost string
}

// AdapterLocator is the RuleFinder explain uses: on first use it finds the
// adapter's rules (--adapter-config, else the APIService of the metric's
// API names the adapter's Service, and the ConfigMap of the same name and
// namespace holds them under config.yaml, as both gpuscale's chart and
// prometheus-adapter's install it) and its Prometheus, then answers with
// AdapterRules. A failure to find them is the answer's RuleError.
type AdapterLocator struct {
	o    LocatorOptions
	mu   sync.Mutex
	done map[string]locateResult // by API group
}

type locateResult struct {
	rules *AdapterRules
	err   error
}

// NewAdapterLocator builds a locator; it calls nothing until asked.
func NewAdapterLocator(o LocatorOptions) *AdapterLocator {
	return &AdapterLocator{o: o, done: map[string]locateResult{}}
}

// Custom implements RuleFinder.
func (l *AdapterLocator) Custom(ctx context.Context, m CustomMetric) (RuleAnswer, error) {
	r, err := l.rules(ctx, "custom.metrics.k8s.io")
	if err != nil {
		return RuleAnswer{}, err
	}
	return r.Custom(ctx, m)
}

// External implements RuleFinder.
func (l *AdapterLocator) External(ctx context.Context, namespace, metric string, selector labels.Selector) (RuleAnswer, error) {
	r, err := l.rules(ctx, "external.metrics.k8s.io")
	if err != nil {
		return RuleAnswer{}, err
	}
	return r.External(ctx, namespace, metric, selector)
}

func (l *AdapterLocator) rules(ctx context.Context, group string) (*AdapterRules, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := group
	if l.o.ConfigFile != "" {
		key = "file"
	}
	if r, ok := l.done[key]; ok {
		return r.rules, r.err
	}
	r, err := l.locate(ctx, group)
	l.done[key] = locateResult{r, err}
	return r, err
}

func (l *AdapterLocator) locate(ctx context.Context, group string) (*AdapterRules, error) {
	var cfg *config.Config
	var source, deployNS, deployName string
	if l.o.ConfigFile != "" {
		c, err := config.Load(l.o.ConfigFile)
		if err != nil {
			return nil, err
		}
		cfg, source = c, "file "+l.o.ConfigFile
	} else {
		ns, name, err := l.adapterService(ctx, group)
		if err != nil {
			return nil, err
		}
		c, err := l.configMap(ctx, ns, name, group)
		if err != nil {
			return nil, err
		}
		cfg, source, deployNS, deployName = c, "ConfigMap "+ns+"/"+name, ns, name
	}
	rules, err := metricsadapter.CompileRules(cfg, l.o.PrometheusURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if rules.PrometheusURL == "" && deployName != "" {
		rules.PrometheusURL = l.deploymentPrometheus(ctx, deployNS, deployName)
	}
	if rules.PrometheusURL == "" {
		return nil, fmt.Errorf("the adapter's Prometheus is not known: %s gives no prometheus.url; pass --prometheus-url", source)
	}
	client, err := l.prometheus(rules.PrometheusURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return NewAdapterRules(AdapterRulesOptions{Rules: rules, Source: source, Prometheus: client, Mapper: l.o.Mapper})
}

// adapterService reads which Service the API's APIService routes to.
func (l *AdapterLocator) adapterService(ctx context.Context, group string) (string, string, error) {
	name := "v1beta1." + group
	if l.o.Dynamic == nil {
		return "", "", fmt.Errorf("no --adapter-config given and no way to read APIService %s", name)
	}
	obj, err := l.o.Dynamic.Resource(apiServiceResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", "", fmt.Errorf("APIService %s not found: no metrics adapter serves %s; pass --adapter-config", name, group)
	}
	if err != nil {
		return "", "", fmt.Errorf("APIService %s: %w (pass --adapter-config)", name, err)
	}
	ns, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace")
	svc, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name")
	if ns == "" || svc == "" {
		return "", "", fmt.Errorf("APIService %s routes to no Service: pass --adapter-config", name)
	}
	return ns, svc, nil
}

// configMap reads the rules from the ConfigMap named like the Service.
func (l *AdapterLocator) configMap(ctx context.Context, ns, name, group string) (*config.Config, error) {
	cm, err := l.o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if text, ok := cm.Data[AdapterConfigKey]; ok {
			c, perr := config.Parse([]byte(text))
			if perr != nil {
				return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", ns, name, AdapterConfigKey, perr)
			}
			return c, nil
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
	}
	return nil, fmt.Errorf("%s is served by Service %s/%s, but no ConfigMap %s/%s with key %s holds its rules (where gpuscale's and prometheus-adapter's charts keep them): pass --adapter-config",
		group, ns, name, ns, name, AdapterConfigKey)
}

// deploymentPrometheus reads --prometheus-url from the adapter's
// Deployment (named like its Service in both charts); "" when absent.
func (l *AdapterLocator) deploymentPrometheus(ctx context.Context, ns, name string) string {
	d, err := l.o.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		args := append(append([]string(nil), c.Command...), c.Args...)
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--prometheus-url="); ok {
				return v
			}
			if a == "--prometheus-url" && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// prometheus builds the client, through the API server's service proxy
// when the URL names an in-cluster Service and a proxy is configured.
func (l *AdapterLocator) prometheus(raw string) (*prom.Client, error) {
	if l.o.Transport != nil && l.o.ProxyHost != "" {
		proxied, ok, err := ServiceProxyURL(l.o.ProxyHost, raw)
		if err != nil {
			return nil, err
		}
		if ok {
			return prom.New(prom.Options{URL: proxied, Transport: l.o.Transport})
		}
	}
	return prom.New(prom.Options{URL: raw})
}
