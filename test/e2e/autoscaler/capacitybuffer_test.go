package autoscaler_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// A CapacityBuffer of one whole-GPU-node chunk: a GPU node appears with no
// real pod pending, and the buffer's status says so (ReadyForProvisioning
// and Provisioning True, 1 chunk). A real pod then lands on that node at
// once, with no scale-up for it; the buffer, its room taken, asks for a
// second node.
func TestCapacityBufferKeepsAWarmGPUNode(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tmpl := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "llm-shape", Namespace: "default"},
		Template: v1.PodTemplateSpec{Spec: wholeGPUNodePod()}}
	if _, err := c.Client.CoreV1().PodTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	buf := &cb.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: "default"},
		Spec: cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: "llm-shape"}, Replicas: &one}}
	u, err := cb.ToUnstructured(buf)
	if err != nil {
		t.Fatal(err)
	}
	buffers := dyn.Resource(cb.GroupVersionResource()).Namespace("default")
	if _, err := buffers.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	read := func() *cb.CapacityBuffer {
		u, err := buffers.Get(ctx, "warm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := cb.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	count := func() int { return len(groupNodes(t, c.Client, "gpu")) }
	o := fastOptions()
	o.Dynamic = dyn
	o.Autoscaler.CapacityBuffers = cb.Options{ControllerEnabled: true, PodInjectionEnabled: true}
	c.StartAutoscaler(t, gangKwokConfig(t, 3), o)

	eventually(t, 60*time.Second, "a GPU node for the buffer", func() bool { return count() == 1 })
	if peak := maxDuring(5*time.Second, count); peak != 1 {
		t.Fatalf("GPU nodes peaked at %d for a buffer of 1 chunk, want 1", peak)
	}
	warm := groupNodes(t, c.Client, "gpu")[0].Name
	eventually(t, 30*time.Second, "the buffer's status", func() bool {
		b := read()
		r, p := b.Condition(cb.ReadyForProvisioning), b.Condition(cb.Provisioning)
		return b.Status.Replicas != nil && *b.Status.Replicas == 1 && r != nil && r.Status == metav1.ConditionTrue &&
			p != nil && p.Status == metav1.ConditionTrue
	})
	// The node outlives the unneeded time: the buffer's room keeps it.
	time.Sleep(2 * o.Autoscaler.ScaleDown.UnneededTime)
	if n := groupNodes(t, c.Client, "gpu"); len(n) != 1 || n[0].Name != warm {
		t.Fatalf("GPU nodes %v after the unneeded time, want %s kept for the buffer", n, warm)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "llm-0", Namespace: "default", Labels: map[string]string{"app": "llm"}},
		Spec: wholeGPUNodePod()}
	created := time.Now()
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the real pod to run", func() bool { return runningPods(t, c.Client, "llm") == 1 })
	got, err := c.Client.CoreV1().Pods("default").Get(ctx, "llm-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != warm {
		t.Errorf("the real pod runs on %s, want the warm node %s", got.Spec.NodeName, warm)
	}
	t.Logf("the real pod ran %s after it was created", time.Since(created).Round(100*time.Millisecond))
	eventually(t, 60*time.Second, "a second GPU node for the buffer's room", func() bool { return count() == 2 })
}
