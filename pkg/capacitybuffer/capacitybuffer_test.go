package capacitybuffer_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
)

func i32(v int32) *int32 { return &v }

func gpuShape() v1.PodTemplateSpec {
	return v1.PodTemplateSpec{Spec: builder.Pod("x").CPU("4").Memory("16Gi").GPU(1).Build().Spec}
}

func sources() cb.Sources {
	return cb.Sources{
		Templates: map[string]*v1.PodTemplate{"serving/shape": {ObjectMeta: metav1.ObjectMeta{Name: "shape", Namespace: "serving", Generation: 3},
			Template: gpuShape()}},
		Scalables: map[cb.ScalableKey]cb.Scalable{
			{Namespace: "serving", Group: "apps", Kind: "Deployment", Name: "llm"}: {Template: gpuShape(), Replicas: 10},
		},
	}
}

func buffer(spec cb.Spec) *cb.CapacityBuffer {
	return &cb.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "warm"}, Spec: spec}
}

var deployment = &cb.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "llm"}

func limits(kv ...string) *v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return &l
}

func TestResolveChunks(t *testing.T) {
	cases := []struct {
		name string
		spec cb.Spec
		want int32
	}{
		{"replicas of a pod template", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(2)}, 2},
		{"percentage of a scalable, rounded up", cb.Spec{ScalableRef: deployment, Percentage: i32(25)}, 3},
		{"the larger of replicas and percentage", cb.Spec{ScalableRef: deployment, Replicas: i32(1), Percentage: i32(20)}, 2},
		{"limits cap replicas", cb.Spec{ScalableRef: deployment, Replicas: i32(5), Limits: limits("nvidia.com/gpu", "3")}, 3},
		{"the tightest limit wins", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(9),
			Limits: limits("nvidia.com/gpu", "8", "memory", "40Gi")}, 2},
		{"limits alone: as many as fit", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Limits: limits("cpu", "10")}, 2},
		{"limits above replicas leave them", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(1),
			Limits: limits("cpu", "100")}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := cb.Resolve(buffer(c.spec), sources())
			if err != nil {
				t.Fatal(err)
			}
			if r.Buffer.Replicas != c.want {
				t.Errorf("chunks %d, want %d", r.Buffer.Replicas, c.want)
			}
			if r.Buffer.Template.Spec.Containers[0].Resources.Requests.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 1 {
				t.Errorf("template not borrowed: %+v", r.Buffer.Template.Spec)
			}
		})
	}
}

func TestResolveNamesTheFieldAtFault(t *testing.T) {
	cases := []struct {
		name string
		spec cb.Spec
		want string
	}{
		{"neither reference", cb.Spec{Replicas: i32(1)}, "spec: one of podTemplateRef and scalableRef"},
		{"both references", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, ScalableRef: deployment, Replicas: i32(1)}, "both set"},
		{"missing template", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "gone"}, Replicas: i32(1)}, `spec.podTemplateRef.name: PodTemplate serving/gone not found`},
		{"missing scalable", cb.Spec{ScalableRef: &cb.ScalableRef{APIGroup: "apps", Kind: "StatefulSet", Name: "db"}, Replicas: i32(1)}, "spec.scalableRef: StatefulSet serving/db not found"},
		{"unknown kind", cb.Spec{ScalableRef: &cb.ScalableRef{Kind: "CronJob", Name: "c"}, Replicas: i32(1)}, `spec.scalableRef.kind: "CronJob"`},
		{"wrong group", cb.Spec{ScalableRef: &cb.ScalableRef{APIGroup: "batch", Kind: "Deployment", Name: "llm"}, Replicas: i32(1)}, `spec.scalableRef.apiGroup: "batch"`},
		{"negative replicas", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(-1)}, "spec.replicas: must not be negative, got -1"},
		{"percentage of a template", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Percentage: i32(10)}, "spec.percentage: 10 needs spec.scalableRef"},
		{"nothing to size by", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}}, "spec: one of replicas, percentage and limits"},
		{"limits on nothing requested", cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Limits: limits("example.com/fpga", "2")}, "spec.limits: the pod template requests none"},
		{"unknown strategy", cb.Spec{ProvisioningStrategy: ptr("example.com/lazy"), PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(1)}, `spec.provisioningStrategy: "example.com/lazy"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := cb.Resolve(buffer(c.spec), sources())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestResolvedStatusSaysReadyForProvisioning(t *testing.T) {
	b := buffer(cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: i32(2)})
	r, err := cb.Resolve(b, sources())
	st := cb.ResolvedStatus(b, r, err, metav1.Now())
	c := meta(st, cb.ReadyForProvisioning)
	if c == nil || c.Status != metav1.ConditionTrue || st.Replicas == nil || *st.Replicas != 2 ||
		st.PodTemplateRef == nil || st.PodTemplateRef.Name != "shape" || *st.PodTemplateGeneration != 3 ||
		*st.ProvisioningStrategy != cb.StrategyActiveCapacity {
		t.Errorf("status %+v", st)
	}
	b.Spec.PodTemplateRef.Name = "gone"
	b.Status = st
	r, err = cb.Resolve(b, sources())
	st = cb.ResolvedStatus(b, r, err, metav1.Now())
	if c := meta(st, cb.ReadyForProvisioning); c == nil || c.Status != metav1.ConditionFalse || c.Reason != cb.ReasonResolveFailed ||
		!strings.Contains(c.Message, "gone") || st.Replicas != nil {
		t.Errorf("status after the template went: %+v", st)
	}
}

func meta(st cb.Status, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestPlaceholderPods(t *testing.T) {
	b := cb.Buffer{Namespace: "serving", Name: "warm", Replicas: 2, Template: gpuShape()}
	pods := cb.Pods(b, -10)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, p := range pods {
		if key, ok := cb.Of(p); !ok || key != "serving/warm" {
			t.Errorf("%s: buffer %q %v", p.Name, key, ok)
		}
		if *p.Spec.Priority != -10 || p.Spec.NodeName != "" || p.Namespace != "serving" {
			t.Errorf("%s: %+v", p.Name, p.Spec)
		}
	}
	if pods[0].Name == pods[1].Name {
		t.Errorf("placeholders share the name %s", pods[0].Name)
	}
	if _, ok := cb.Of(builder.Pod("llm-0").Build()); ok {
		t.Error("a real pod was taken for a placeholder")
	}
}

// The chart installs the same CRD the local control plane does, and the
// CRD's schema takes a buffer as this package writes it.
func TestChartCRDIsTheEmbeddedOne(t *testing.T) {
	chart, err := os.ReadFile("../../deploy/charts/gpuscale/crds/capacitybuffers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, cb.CRD) {
		t.Error("deploy/charts/gpuscale/crds/capacitybuffers.yaml differs from pkg/capacitybuffer/crd.yaml")
	}
}

func TestUnstructuredRoundTrip(t *testing.T) {
	b := buffer(cb.Spec{ScalableRef: deployment, Percentage: i32(20), Limits: limits("nvidia.com/gpu", "4")})
	u, err := cb.ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "autoscaling.x-k8s.io/v1beta1" || u.GetKind() != "CapacityBuffer" {
		t.Errorf("apiVersion %s kind %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := cb.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.ScalableRef.Kind != "Deployment" || *back.Spec.Percentage != 20 || (*back.Spec.Limits).Name("nvidia.com/gpu", resource.DecimalSI).Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("round trip lost fields: %+v", back.Spec)
	}
}
