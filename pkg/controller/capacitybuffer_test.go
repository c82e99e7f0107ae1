package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuscale/gpuscale/pkg/builder"
	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
)

// A CapacityBuffer of one GPU chunk, read through the dynamic client, grows
// a GPU group with no real pod pending; its status gets the resolved
// chunks and template, ReadyForProvisioning and Provisioning. With the
// flags off the buffer is left alone.
func TestCapacityBufferScalesUpAndGetsItsStatus(t *testing.T) {
	for _, on := range []bool{true, false} {
		cp := twoGroups(3, gpuTemplate)
		o := quietOptions()
		o.Autoscaler.CapacityBuffers = cb.Options{ControllerEnabled: on, PodInjectionEnabled: on}
		replicas := int32(1)
		buf := &cb.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "warm", UID: "u1", Generation: 1},
			Spec: cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "shape"}, Replicas: &replicas}}
		u, err := cb.ToUnstructured(buf)
		if err != nil {
			t.Fatal(err)
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{cb.GroupVersionResource(): "CapacityBufferList"}, u)
		o.Dynamic = dyn
		c, err := New(fake.NewClientset(), cp, o)
		if err != nil {
			t.Fatal(err)
		}
		shape := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "shape"},
			Template: v1.PodTemplateSpec{Spec: builder.Pod("x").CPU("2").GPU(1).Build().Spec}}
		if err := c.factory.Core().V1().PodTemplates().Informer().GetIndexer().Add(shape); err != nil {
			t.Fatal(err)
		}
		if on {
			if err := c.buffers.factory.ForResource(cb.GroupVersionResource()).Informer().GetIndexer().Add(u); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		if err := c.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		var want []string
		if on {
			want = []string{"increase a-cheap 1"}
		}
		if !slices.Equal(cp.calls, want) {
			t.Fatalf("flags %v: calls %v, want %v", on, cp.calls, want)
		}
		got, err := dyn.Resource(cb.GroupVersionResource()).Namespace("serving").Get(ctx, "warm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after, err := cb.FromUnstructured(got)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			if len(after.Status.Conditions) != 0 {
				t.Errorf("flags off: status written %+v", after.Status)
			}
			continue
		}
		st := after.Status
		if st.Replicas == nil || *st.Replicas != 1 || st.PodTemplateRef == nil || st.PodTemplateRef.Name != "shape" {
			t.Errorf("status %+v, want 1 chunk of PodTemplate shape", st)
		}
		for typ, reason := range map[string]string{cb.ReadyForProvisioning: cb.ReasonResolved, cb.Provisioning: cb.ReasonCapacityHeld} {
			c := after.Condition(typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
				t.Errorf("condition %s = %+v, want True, %s", typ, c, reason)
			}
		}
		if doc := c.lastStatus; doc == nil || len(doc.CapacityBuffers) != 1 || doc.CapacityBuffers[0].ScaleUp != 1 {
			t.Errorf("status document buffers %+v, want serving/warm with its chunk on the scale-up", doc)
		}

		// The PodTemplate goes: the buffer is no longer ready and holds no
		// room, and its status says both.
		if err := c.buffers.factory.ForResource(cb.GroupVersionResource()).Informer().GetIndexer().Update(got); err != nil {
			t.Fatal(err)
		}
		if err := c.factory.Core().V1().PodTemplates().Informer().GetIndexer().Delete(shape); err != nil {
			t.Fatal(err)
		}
		if err := c.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		got, err = dyn.Resource(cb.GroupVersionResource()).Namespace("serving").Get(ctx, "warm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after, err = cb.FromUnstructured(got); err != nil {
			t.Fatal(err)
		}
		r, p := after.Condition(cb.ReadyForProvisioning), after.Condition(cb.Provisioning)
		if r == nil || r.Status != metav1.ConditionFalse || r.Reason != cb.ReasonResolveFailed || !strings.Contains(r.Message, "serving/shape not found") ||
			p == nil || p.Status != metav1.ConditionFalse || p.Reason != cb.ReasonNotReady || after.Status.Replicas != nil {
			t.Errorf("after the template went: ReadyForProvisioning %+v, Provisioning %+v, replicas %v", r, p, after.Status.Replicas)
		}
	}
}
