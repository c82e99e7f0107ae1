package metricsadapter

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestLocalAPIServices(t *testing.T) {
	objs := LocalAPIServices("gpuscale-demo", 6443)
	if len(objs) != 1+len(APIGroupVersions()) {
		t.Fatalf("got %d objects, want a Service and %d APIServices", len(objs), len(APIGroupVersions()))
	}
	svc := objs[0]
	if svc.GetKind() != "Service" || svc.GetNamespace() != "gpuscale-demo" || svc.GetName() != ServiceName {
		t.Errorf("first object = %s %s/%s, want Service gpuscale-demo/%s", svc.GetKind(), svc.GetNamespace(), svc.GetName(), ServiceName)
	}
	typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	host, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if typ != "ExternalName" || host != "localhost" || len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(6443) {
		t.Errorf("service spec = %v, want ExternalName localhost port 6443", svc.Object["spec"])
	}
	for i, gv := range APIGroupVersions() {
		a := objs[i+1]
		if a.GetKind() != "APIService" || a.GetName() != gv.Version+"."+gv.Group {
			t.Errorf("object %d = %s %s, want APIService %s.%s", i+1, a.GetKind(), a.GetName(), gv.Version, gv.Group)
		}
		group, _, _ := unstructured.NestedString(a.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(a.Object, "spec", "version")
		skip, _, _ := unstructured.NestedBool(a.Object, "spec", "insecureSkipTLSVerify")
		svcNS, _, _ := unstructured.NestedString(a.Object, "spec", "service", "namespace")
		port, _, _ := unstructured.NestedInt64(a.Object, "spec", "service", "port")
		if group != gv.Group || version != gv.Version || !skip || svcNS != "gpuscale-demo" || port != 6443 {
			t.Errorf("%s spec = %v", a.GetName(), a.Object["spec"])
		}
	}
}

// The shipped manifest registers the same APIServices as the code, apart
// from where the Service is.
func TestManifestMatchesLocalAPIServices(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "metrics-adapter", "apiservice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fromManifest []map[string]any
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == "APIService" {
			spec := obj["spec"].(map[string]any)
			delete(spec, "service")
			fromManifest = append(fromManifest, obj)
		}
	}
	var fromCode []map[string]any
	for _, o := range LocalAPIServices("x", 1)[1:] {
		js, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(js, &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj["spec"].(map[string]any), "service")
		fromCode = append(fromCode, obj)
	}
	if !reflect.DeepEqual(fromManifest, fromCode) {
		t.Errorf("manifest APIServices\n%v\ndiffer from LocalAPIServices\n%v", fromManifest, fromCode)
	}
}

func TestFlagsKeepPrometheusAdapterNames(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	for _, name := range []string{"prometheus-url", "config", "metrics-relist-interval", "metrics-max-age", "prometheus-ca-file",
		"prometheus-token-file", "prometheus-timeout", "prometheus-compression", "secure-port", "cert-dir", "lister-kubeconfig",
		"authentication-kubeconfig", "authorization-kubeconfig"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	err := fs.Parse([]string{"--prometheus-url=http://127.0.0.1:9090", "--config=c.yaml", "--metrics-relist-interval=5s",
		"--prometheus-timeout=2s", "--prometheus-compression", "--secure-port=6443"})
	if err != nil {
		t.Fatal(err)
	}
	if o.PrometheusURL != "http://127.0.0.1:9090" || o.ConfigFile != "c.yaml" || o.RelistInterval != 5*time.Second ||
		o.PrometheusTimeout != 2*time.Second || !o.PrometheusCompression || o.Base.SecureServing.BindPort != 6443 {
		t.Errorf("parsed options = %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestValidateNamesFlags(t *testing.T) {
	o := NewOptions()
	o.RelistInterval = 0
	o.PrometheusTimeout = -time.Second
	err := o.Validate()
	for _, want := range []string{"--config", "--metrics-relist-interval", "--prometheus-timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not name %s", err, want)
		}
	}
	o = NewOptions()
	o.ConfigFile, o.MetricsMaxAge = "c.yaml", time.Minute
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-max-age") {
		t.Errorf("max age below the relist interval: %v", err)
	}
}

func TestLoadRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	helm := write("values.yaml", "prometheus: {url: http://prom.monitoring.svc, port: 9090}\nrules:\n  custom:\n"+
		"  - seriesQuery: up\n    resources: {template: <<.Resource>>}\n    metricsQuery: sum(<<.Series>>)\n"+
		"  external:\n  - seriesQuery: q\n    metricsQuery: sum(<<.Series>>)\n")
	r, err := LoadRules(helm, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.PrometheusURL != "http://prom.monitoring.svc:9090" || len(r.Custom) != 1 || len(r.External) != 1 ||
		r.Custom[0].ID != "rules[0]" || r.External[0].ID != "externalRules[0]" || !r.External[0].External {
		t.Errorf("LoadRules = %+v", r)
	}
	if r, err := LoadRules(helm, "http://127.0.0.1:9090"); err != nil || r.PrometheusURL != "http://127.0.0.1:9090" {
		t.Errorf("the flag must win over the values: %v, %v", r, err)
	}
	plain := write("plain.yaml", "rules: []\n")
	if _, err := LoadRules(plain, ""); err == nil || !strings.Contains(err.Error(), "--prometheus-url") {
		t.Errorf("no URL anywhere: err = %v, want one naming --prometheus-url", err)
	}
}
