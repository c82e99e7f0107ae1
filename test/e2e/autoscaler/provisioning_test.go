package autoscaler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// A best-effort-atomic-scale-up ProvisioningRequest for a gang of 4 pods,
// each filling a whole GPU node: while the GPU group's max size allows 3
// nodes, none is bought and Provisioned=False names the group and its
// bound; once the max allows 4 (the autoscaler restarted with the new
// configuration), exactly 4 nodes come, Provisioned=True, the consuming
// pods run on them, and their starting ends the booking.
func TestProvisioningRequestAllOrNothing(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cond := createRequest(t, c, dyn, "train", "trainer", pr.ClassBestEffortAtomicScaleUp, nil, 4)
	count := func() int { return len(groupNodes(t, c.Client, "gpu")) }
	o := fastOptions()
	o.Dynamic = dyn
	o.Autoscaler.ProvisioningRequests.Enabled = true
	o.Autoscaler.ProvisioningRequests.InitialBackoff = time.Second
	o.Autoscaler.ProvisioningRequests.MaxBackoff = 2 * time.Second

	a := c.StartAutoscaler(t, gangKwokConfig(t, 3), o)
	var p *metav1.Condition
	eventually(t, 60*time.Second, "Provisioned=False with max size 3", func() bool {
		p = cond(pr.Provisioned)
		return p != nil && p.Status == metav1.ConditionFalse
	})
	if p.Reason != pr.ReasonCapacityIsNotFound || !strings.Contains(p.Message, "node group gpu: only 3 of 4 pods fit on the 3 new node(s) that max size 3 allows") {
		t.Errorf("Provisioned=False %s: %q, want %s saying the group's max size 3 holds only 3 of the 4 pods", p.Reason, p.Message, pr.ReasonCapacityIsNotFound)
	}
	if acc := cond(pr.Accepted); acc == nil || acc.Status != metav1.ConditionTrue {
		t.Errorf("Accepted = %v, want True", acc)
	}
	if peak := maxDuring(6*time.Second, count); peak != 0 {
		t.Fatalf("%d GPU nodes bought for a gang of 4 that only 3 fit, want none", peak)
	}
	a.Stop()

	c.StartAutoscaler(t, gangKwokConfig(t, 4), o)
	eventually(t, 60*time.Second, "Provisioned=True with max size 4", func() bool {
		p = cond(pr.Provisioned)
		return p != nil && p.Status == metav1.ConditionTrue
	})
	if p.Reason != pr.ReasonCapacityIsProvisioned {
		t.Errorf("Provisioned=True reason %s, want %s", p.Reason, pr.ReasonCapacityIsProvisioned)
	}
	eventually(t, 60*time.Second, "4 GPU nodes", func() bool { return count() == 4 })
	consumingPods(t, c, "train", "trainer", pr.ClassBestEffortAtomicScaleUp, 4)
	eventually(t, 60*time.Second, "the 4 consuming pods to run", func() bool { return runningPods(t, c.Client, "trainer") == 4 })
	if peak := maxDuring(4*time.Second, count); peak != 4 {
		t.Fatalf("GPU nodes peaked at %d for the gang of 4, want exactly 4", peak)
	}
	eventually(t, 30*time.Second, "BookingExpired once every pod runs", func() bool {
		b := cond(pr.BookingExpired)
		return b != nil && b.Status == metav1.ConditionTrue && b.Reason == pr.ReasonCapacityBookingConsumed
	})
}

// createRequest creates a PodTemplate named app (pods labelled app=app,
// each filling a whole GPU node) and a ProvisioningRequest name of count
// of its pods, and returns a reader of the request's conditions.
func createRequest(t *testing.T, c *cluster.Cluster, dyn dynamic.Interface, name, app, class string, params map[string]string,
	count int32) func(typ string) *metav1.Condition {
	t.Helper()
	ctx := context.Background()
	tmpl := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: wholeGPUNodePod()}}
	if _, err := c.Client.CoreV1().PodTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req := &pr.ProvisioningRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: pr.Group + "/" + pr.Version, Kind: pr.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: pr.Spec{ProvisioningClassName: class, Parameters: params,
			PodSets: []pr.PodSet{{PodTemplateRef: pr.Reference{Name: app}, Count: count}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(req)
	if err != nil {
		t.Fatal(err)
	}
	requests := dyn.Resource(pr.GroupVersionResource()).Namespace("default")
	if _, err := requests.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(typ string) *metav1.Condition {
		u, err := requests.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got pr.ProvisioningRequest
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
			t.Fatal(err)
		}
		return got.Condition(typ)
	}
}

// consumingPods creates count pods of app that consume the request name.
func consumingPods(t *testing.T, c *cluster.Cluster, name, app, class string, count int) {
	t.Helper()
	for i := 0; i < count; i++ {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Namespace: "default",
			Labels:      map[string]string{"app": app},
			Annotations: map[string]string{pr.AnnotationConsume: name, pr.AnnotationClass: class}},
			Spec: wholeGPUNodePod()}
		if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// wholeGPUNodePod asks for a g5.xlarge's one GPU and most of its CPU.
func wholeGPUNodePod() v1.PodSpec {
	gpu := resource.MustParse("1")
	return v1.PodSpec{
		Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), "nvidia.com/gpu": gpu},
			Limits:   v1.ResourceList{"nvidia.com/gpu": gpu}}}},
		Tolerations: []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
	}
}

// gangKwokConfig is one GPU group of one-GPU nodes, empty at the start.
func gangKwokConfig(t *testing.T, maxSize int) *kwok.Config {
	t.Helper()
	cfg, err := kwok.ParseConfig([]byte(fmt.Sprintf(`
provisioningDelay: 1s
nodeGroups:
- name: gpu
  minSize: 0
  maxSize: %d
  instanceType: g5.xlarge
  pricePerHour: 1.006
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
`, maxSize)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
