package provisioningrequest_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func req(class string, params map[string]string) *pr.ProvisioningRequest {
	return &pr.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ml", UID: types.UID("u1"), CreationTimestamp: metav1.NewTime(t0)},
		Spec: pr.Spec{ProvisioningClassName: class, Parameters: params, PodSets: []pr.PodSet{
			{PodTemplateRef: pr.Reference{Name: "a"}, Count: 2}, {PodTemplateRef: pr.Reference{Name: "b"}, Count: 1}}},
	}
}

func TestPodsFromTemplates(t *testing.T) {
	r := req(pr.ClassBestEffortAtomicScaleUp, nil)
	tmpl := func(name, cpu string) *v1.PodTemplate {
		return &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Template: v1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"set": name}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}}
	}
	pods, err := pr.Pods(r, map[string]*v1.PodTemplate{"a": tmpl("a", "1"), "b": tmpl("b", "2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 3 || pods[0].Labels["set"] != "a" || pods[2].Labels["set"] != "b" {
		t.Fatalf("pods %v, want 2 of a and 1 of b", pods)
	}
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
		if name, ok := pr.ConsumerOf(p); !ok || name != "r" || p.Namespace != "ml" || p.OwnerReferences[0].UID != "u1" {
			t.Errorf("pod %s: consumer %q %v, namespace %s, owner %v", p.Name, name, ok, p.Namespace, p.OwnerReferences)
		}
		if !strings.Contains(p.Name, ":") {
			t.Errorf("pod name %q could be a real pod's", p.Name)
		}
	}
	if len(names) != 3 {
		t.Errorf("pod names not unique: %v", names)
	}
	_, err = pr.Pods(r, map[string]*v1.PodTemplate{"a": tmpl("a", "1")})
	if err == nil || !strings.Contains(err.Error(), "b") {
		t.Errorf("missing template b: error %v", err)
	}
}

func TestServes(t *testing.T) {
	plain, inst := pr.DefaultOptions(), pr.DefaultOptions()
	inst.ProcessorInstance = "batch"
	cases := []struct {
		r           *pr.ProvisioningRequest
		plain, inst bool
	}{
		{req(pr.ClassBestEffortAtomicScaleUp, nil), true, false},
		{req(pr.ClassCheckCapacity, nil), true, false},
		{req(pr.ClassCheckCapacity, map[string]string{pr.ParamProcessorInstance: "batch"}), false, true},
		{req(pr.ClassQueuedProvisioning, nil), true, false},
		{req("example.com/another-class", nil), false, false},
	}
	for _, c := range cases {
		if got := plain.Serves(c.r); got != c.plain {
			t.Errorf("%s %v without an instance: %v", c.r.Spec.ProvisioningClassName, c.r.Spec.Parameters, got)
		}
		if got := inst.Serves(c.r); got != c.inst {
			t.Errorf("%s %v with instance batch: %v", c.r.Spec.ProvisioningClassName, c.r.Spec.Parameters, got)
		}
	}
}

func TestUnstructuredRoundTrip(t *testing.T) {
	r := req(pr.ClassCheckCapacity, map[string]string{pr.ParamNoRetry: "true"})
	r.Status.Conditions = []metav1.Condition{pr.NewCondition(r, pr.Provisioned, metav1.ConditionTrue, pr.ReasonCapacityIsFound, "m", metav1.NewTime(t0))}
	u, err := pr.ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "autoscaling.x-k8s.io/v1" || u.GetKind() != "ProvisioningRequest" {
		t.Errorf("apiVersion %s kind %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := pr.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.PodSets[1].Count != 1 || back.Spec.Parameters[pr.ParamNoRetry] != "true" || !back.IsTrue(pr.Provisioned) {
		t.Errorf("round trip lost fields: %+v", back)
	}
}

// The chart installs the same CRD the local control plane does.
func TestChartCRDIsTheEmbeddedOne(t *testing.T) {
	chart, err := os.ReadFile("../../deploy/charts/gpuscale/crds/provisioningrequests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, pr.CRD) {
		t.Error("deploy/charts/gpuscale/crds/provisioningrequests.yaml differs from pkg/provisioningrequest/crd.yaml")
	}
}
