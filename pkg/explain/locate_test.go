package explain

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func apiService(name, ns, svc string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"service": map[string]any{"namespace": ns, "name": svc}},
	}}
}

// plainRules is the adapter's ConfigMap as the charts write it: the plain
// form, without prometheus.url (the Deployment's flag carries it).
const plainRules = `rules:
- seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}'
  resources:
    overrides:
      exported_namespace: {resource: namespace}
      exported_pod: {resource: pod}
  name: {as: gpu_utilization}
  metricsQuery: 'avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

// The locator follows the APIService to the adapter's Service, reads the
// rules from the namesake ConfigMap and Prometheus's URL from the
// namesake Deployment, and reaches that in-cluster URL through the API
// server's service proxy.
func TestAdapterLocatorFindsTheRulesInTheCluster(t *testing.T) {
	var paths []string
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if !strings.HasSuffix(r.URL.Path, "/api/v1/series") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":[{"__name__":"DCGM_FI_DEV_GPU_UTIL","exported_namespace":"default","exported_pod":"web-1"}]}`)
	}))
	defer apiServer.Close()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gpuscale-metrics-adapter", Namespace: "monitoring"},
		Data: map[string]string{AdapterConfigKey: plainRules}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gpuscale-metrics-adapter", Namespace: "monitoring"},
		Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "metrics-adapter",
			Args: []string{"metrics-adapter", "--config=/etc/gpuscale/config.yaml", "--prometheus-url=http://prometheus.monitoring.svc:9090"}}}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{apiServiceResource: "APIServiceList"},
		apiService("v1beta1.custom.metrics.k8s.io", "monitoring", "gpuscale-metrics-adapter"))
	l := NewAdapterLocator(LocatorOptions{Client: fake.NewClientset(cm, deploy), Dynamic: dyn, Mapper: testMapper(),
		Transport: http.DefaultTransport, ProxyHost: apiServer.URL})
	ans, err := l.Custom(context.Background(), CustomMetric{Namespace: "default", Kind: schema.GroupKind{Kind: "Pod"},
		Names: []string{"web-1"}, Metric: "gpu_utilization", Selector: labels.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Source != "ConfigMap monitoring/gpuscale-metrics-adapter" || ans.Rule != "rules[0]" ||
		ans.Query != `avg(DCGM_FI_DEV_GPU_UTIL{exported_pod="web-1",exported_namespace="default"}) by (exported_pod)` {
		t.Errorf("answer %+v", ans)
	}
	want := "/api/v1/namespaces/monitoring/services/http:prometheus:9090/proxy/api/v1/series"
	if len(paths) == 0 || paths[0] != want {
		t.Errorf("Prometheus was asked at %q, want %q", paths, want)
	}

	// No APIService for external metrics: the answer says what to pass.
	_, err = l.External(context.Background(), "default", "queue_depth", labels.Everything())
	if err == nil || !strings.Contains(err.Error(), "APIService v1beta1.external.metrics.k8s.io not found") || !strings.Contains(err.Error(), "--adapter-config") {
		t.Errorf("external without an adapter: %v", err)
	}
}

// An APIService whose Service has no ConfigMap of rules beside it gets an
// answer that names both and the flag to pass.
func TestAdapterLocatorWithoutTheConfigMap(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{apiServiceResource: "APIServiceList"},
		apiService("v1beta1.custom.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver"))
	l := NewAdapterLocator(LocatorOptions{Client: fake.NewClientset(), Dynamic: dyn, Mapper: testMapper()})
	_, err := l.Custom(context.Background(), CustomMetric{Namespace: "default", Kind: schema.GroupKind{Kind: "Pod"}, Names: []string{"a"}, Metric: "m"})
	want := "custom.metrics.k8s.io is served by Service keda/keda-operator-metrics-apiserver, but no ConfigMap keda/keda-operator-metrics-apiserver with key config.yaml"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "pass --adapter-config") {
		t.Errorf("err = %v", err)
	}
}

func TestServiceProxyURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://prometheus.monitoring.svc:9090", "https://api:6443/api/v1/namespaces/monitoring/services/http:prometheus:9090/proxy"},
		{"http://prometheus-kube-prometheus-prometheus.monitoring.svc.cluster.local:9090/prom/",
			"https://api:6443/api/v1/namespaces/monitoring/services/http:prometheus-kube-prometheus-prometheus:9090/proxy/prom"},
		{"https://thanos.obs.svc", "https://api:6443/api/v1/namespaces/obs/services/https:thanos:443/proxy"},
	}
	for _, tc := range cases {
		got, ok, err := ServiceProxyURL("https://api:6443/", tc.in)
		if err != nil || !ok || got != tc.want {
			t.Errorf("ServiceProxyURL(%q) = %q, %v, %v; want %q", tc.in, got, ok, err, tc.want)
		}
	}
	for _, direct := range []string{"http://127.0.0.1:9090", "http://prometheus.example.com", "http://prometheus:9090"} {
		if got, ok, err := ServiceProxyURL("https://api:6443", direct); ok || err != nil {
			t.Errorf("ServiceProxyURL(%q) = %q, %v; want it called directly", direct, got, err)
		}
	}
}

// A Service URL whose parts would leave the Service's proxy path is
// refused with the part named, never followed with the caller's
// credentials.
func TestServiceProxyURLRefusesWhatLeavesTheService(t *testing.T) {
	for in, want := range map[string]string{
		"http://prometheus.monitoring.svc:9090/../../../../api/v1/namespaces/kube-system/secrets": `segment ".."`,
		"http://prometheus.monitoring.svc:9090/a/./b":                                             `segment "."`,
		"http://prometheus.monitoring.svc:9090/%2e%2e/%2e%2e/api":                                 "escaped characters",
		"http://prometheus.monitoring.svc:9090/a%2Fb":                                             "escaped characters",
		"http://Prometheus.monitoring.svc:9090":                                                   `service name "Prometheus"`,
		"http://prometheus.kube_system.svc:9090":                                                  `namespace "kube_system"`,
		"http://prometheus.monitoring.svc:0":                                                      `port "0"`,
		"http://prometheus.monitoring.svc:99999":                                                  `port "99999"`,
		"http://prometheus.monitoring.svc:9090/api?x=1":                                           "query",
		"ftp://prometheus.monitoring.svc:9090":                                                    `scheme "ftp"`,
		"http://admin:hunter2@prometheus.monitoring.svc:9090/..":                                  `segment ".."`,
	} {
		got, ok, err := ServiceProxyURL("https://api:6443", in)
		if err == nil || ok {
			t.Errorf("ServiceProxyURL(%q) = %q, %v; want it refused", in, got, ok)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ServiceProxyURL(%q): %v; want it to say %s and print no password", in, err, want)
		}
	}
}

// A ConfigMap that points Prometheus at another API path through ".."
// gets an error naming the ConfigMap, and no request is made.
func TestAdapterLocatorRefusesAProxyPathOutOfTheService(t *testing.T) {
	var paths []string
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.RawPath+" "+r.URL.Path)
		fmt.Fprint(w, `{"status":"success","data":[]}`)
	}))
	defer apiServer.Close()
	values := "prometheus:\n  url: http://prometheus.monitoring.svc\n  port: 9090\n  path: /../../../../api/v1/namespaces/kube-system/secrets\n" +
		"rules:\n  custom:\n  " + strings.ReplaceAll(strings.TrimPrefix(plainRules, "rules:\n"), "\n", "\n  ")
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gpuscale-metrics-adapter", Namespace: "monitoring"},
		Data: map[string]string{AdapterConfigKey: values}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{apiServiceResource: "APIServiceList"},
		apiService("v1beta1.custom.metrics.k8s.io", "monitoring", "gpuscale-metrics-adapter"))
	l := NewAdapterLocator(LocatorOptions{Client: fake.NewClientset(cm), Dynamic: dyn, Mapper: testMapper(),
		Transport: http.DefaultTransport, ProxyHost: apiServer.URL})
	_, err := l.Custom(context.Background(), CustomMetric{Namespace: "default", Kind: schema.GroupKind{Kind: "Pod"},
		Names: []string{"web-1"}, Metric: "gpu_utilization", Selector: labels.Everything()})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap monitoring/gpuscale-metrics-adapter") || !strings.Contains(err.Error(), `segment ".."`) {
		t.Errorf("err = %v; want the ConfigMap and the segment named", err)
	}
	if len(paths) > 0 {
		t.Errorf("requests were made through the proxy: %q", paths)
	}
}
