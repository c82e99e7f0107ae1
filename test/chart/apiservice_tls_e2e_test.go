package chart_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// The chart's certificate for the metrics adapter is kept across upgrades
// (Helm's lookup finds the Secret) and renewed by the first upgrade within
// 30 days of its end, the APIServices following with the new CA.
func TestChartCertificateIsKeptThenRenewed(t *testing.T) {
	helmBinary(t)
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	install := func(verb string) {
		t.Helper()
		if _, err := helm(t, verb, releaseName, chartDir, "--namespace", namespace, "--kubeconfig", c.Kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	secret := func() (map[string][]byte, map[string]string) {
		t.Helper()
		s, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, adapterName+"-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data, s.Annotations
	}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	caBundle := func() []byte {
		t.Helper()
		u, err := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).
			Get(ctx, "v1beta1.custom.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, _, _ := unstructured.NestedString(u.Object, "spec", "caBundle")
		return []byte(b)
	}

	install("install")
	first, ann := secret()
	notAfter, err := strconv.ParseInt(ann["gpuscale.dev/not-after"], 10, 64)
	if err != nil || time.Until(time.Unix(notAfter, 0)) < 3000*24*time.Hour {
		t.Fatalf("not-after %q: want about ten years ahead (%v)", ann["gpuscale.dev/not-after"], err)
	}
	install("upgrade")
	kept, _ := secret()
	if !bytes.Equal(kept["tls.crt"], first["tls.crt"]) || !bytes.Equal(kept["ca.crt"], first["ca.crt"]) {
		t.Fatal("an upgrade replaced a certificate ten years from its end")
	}

	// Ten days from its end, the next upgrade renews it. The annotation is
	// applied as Helm's own field manager, so that Helm's next apply finds
	// no other writer to conflict with.
	s, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, adapterName+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manager := ""
	for _, m := range s.ManagedFields {
		if m.Operation == metav1.ManagedFieldsOperationApply {
			manager = m.Manager
		}
	}
	if manager == "" {
		t.Fatalf("no apply manager owns the Secret: %+v", s.ManagedFields)
	}
	// The whole object, since an apply by the same manager drops what it
	// leaves out.
	s.Annotations["gpuscale.dev/not-after"] = strconv.FormatInt(time.Now().Add(10*24*time.Hour).Unix(), 10)
	patch, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": s.Type, "data": s.Data,
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace, "labels": s.Labels, "annotations": s.Annotations}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(namespace).Patch(ctx, adapterName+"-tls", types.ApplyPatchType, patch,
		metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	install("upgrade")
	renewed, _ := secret()
	if bytes.Equal(renewed["tls.crt"], first["tls.crt"]) || bytes.Equal(renewed["ca.crt"], first["ca.crt"]) {
		t.Fatal("an upgrade within 30 days of the end kept the certificate")
	}
	if got := caBundle(); string(got) != string(encodeB64(renewed["ca.crt"])) {
		t.Errorf("the APIService's caBundle is not the renewed CA")
	}
}

func encodeB64(b []byte) []byte {
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)
	return out
}
