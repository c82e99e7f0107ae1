package chart_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// apiServiceTLS is each APIService's caBundle and insecureSkipTLSVerify.
func apiServiceTLS(t *testing.T, objs objects) (bundles []string, insecure []bool) {
	t.Helper()
	for _, u := range objs.ofKind("APIService") {
		b, _, _ := unstructured.NestedString(u.Object, "spec", "caBundle")
		skip, _, _ := unstructured.NestedBool(u.Object, "spec", "insecureSkipTLSVerify")
		bundles, insecure = append(bundles, b), append(insecure, skip)
	}
	if len(bundles) == 0 {
		t.Fatal("no APIService rendered")
	}
	return bundles, insecure
}

// adapterTLSArgs are the adapter's TLS flags and the Secret mounted for them.
func adapterTLSArgs(t *testing.T, objs objects) (args []string, secret string) {
	t.Helper()
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, adapterName), &d)
	for _, a := range onlyContainer(t, &d).Args {
		if strings.HasPrefix(a, "--tls-") || strings.HasPrefix(a, "--cert-dir") {
			args = append(args, a)
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "serving-cert" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	return args, secret
}

// By default the API server verifies the adapter: the chart generates a CA
// and a certificate for the adapter's Service, the adapter serves it, and
// every APIService carries the CA.
func TestAPIServiceVerifiesTheAdapterByDefault(t *testing.T) {
	objs := render(t, "")
	var s v1.Secret
	objs.typed(t, key("Secret", namespace, adapterName+"-tls"), &s)
	bundles, insecure := apiServiceTLS(t, objs)
	for i := range bundles {
		if insecure[i] || bundles[i] != base64.StdEncoding.EncodeToString(s.Data["ca.crt"]) {
			t.Errorf("APIService %d: insecureSkipTLSVerify %v, caBundle %.20q..., want verification with the Secret's CA", i, insecure[i], bundles[i])
		}
	}
	if args, secret := adapterTLSArgs(t, objs); secret != adapterName+"-tls" ||
		strings.Join(args, " ") != "--tls-cert-file=/var/run/serving-cert/tls.crt --tls-private-key-file=/var/run/serving-cert/tls.key" {
		t.Errorf("adapter serves %q from Secret %q, want the chart's certificate", args, secret)
	}
	// The certificate is for the Service's name, signed by the CA, and its
	// key is its own.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(s.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: adapterName + "." + namespace + ".svc"}); err != nil {
		t.Errorf("the serving certificate does not verify for the Service: %v", err)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		t.Errorf("tls.key does not match tls.crt: %v", err)
	}
	if s.Annotations["gpuscale.dev/not-after"] == "" {
		t.Error("the Secret does not say when its certificate ends, so an upgrade could not renew it")
	}
}

// Skipping verification is an explicit opt-in; a certificate of one's own
// needs its CA, or cert-manager's injector, named.
func TestAPIServiceTLSModes(t *testing.T) {
	objs := render(t, "", "--set", "metricsAdapter.apiService.insecureSkipTLSVerify=true")
	bundles, insecure := apiServiceTLS(t, objs)
	if !insecure[0] || bundles[0] != "" || objs[key("Secret", namespace, adapterName+"-tls")] != nil {
		t.Errorf("opt-in: insecure %v, caBundle %q; want verification skipped and no generated Secret", insecure[0], bundles[0])
	}
	if args, _ := adapterTLSArgs(t, objs); strings.Join(args, " ") != "--cert-dir=/var/run/serving-cert" {
		t.Errorf("opt-in: adapter TLS flags %q", args)
	}

	objs = render(t, "", "--set", "metricsAdapter.tls.secretName=adapter-tls", "--set", "metricsAdapter.apiService.caBundle=Q0E=")
	bundles, insecure = apiServiceTLS(t, objs)
	if insecure[0] || bundles[0] != "Q0E=" || objs[key("Secret", namespace, adapterName+"-tls")] != nil {
		t.Errorf("own Secret: insecure %v, caBundle %q; want the given CA", insecure[0], bundles[0])
	}
	if _, secret := adapterTLSArgs(t, objs); secret != "adapter-tls" {
		t.Errorf("own Secret: adapter mounts %q", secret)
	}

	_, err := helm(t, templateArgs("", "--set", "metricsAdapter.tls.secretName=adapter-tls")...)
	if err == nil || !strings.Contains(err.Error(), "metricsAdapter.apiService.caBundle: the CA of the certificate in metricsAdapter.tls.secretName is needed") {
		t.Errorf("own Secret without its CA: %v", err)
	}
	objs = render(t, "", "--set", "metricsAdapter.tls.secretName=adapter-tls",
		"--set", `metricsAdapter.apiService.annotations.cert-manager\.io/inject-ca-from=kube-system/adapter-tls`)
	for _, u := range objs.ofKind("APIService") {
		if u.GetAnnotations()["cert-manager.io/inject-ca-from"] != "kube-system/adapter-tls" {
			t.Errorf("APIService %s lacks cert-manager's annotation: %v", u.GetName(), u.GetAnnotations())
		}
	}
}
