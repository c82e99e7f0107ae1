package autoscaler_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/looprecord"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// draKwokConfig has a DRA group, whose nodes publish one GPU each as a
// ResourceSlice once their driver starts (the kwok provider publishes it,
// as the driver would), and a cheaper CPU group that a claim of a GPU must
// not be mistaken for.
func draKwokConfig(t *testing.T) *kwok.Config {
	t.Helper()
	cfg, err := kwok.ParseConfig([]byte(`
provisioningDelay: 1s
devicePluginDelay: 3s
nodeGroups:
- name: dra-a10g
  minSize: 0
  maxSize: 4
  instanceType: g5.xlarge
  pricePerHour: 1.006
  zone: us-east-1a
  template:
    capacity: {cpu: "4", memory: 16Gi, pods: "110"}
    devices:
    - driver: gpu.nvidia.com
      count: 1
      gpuModel: nvidia-a10g
` + cpuGroupYAML))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A Deployment whose pods each claim one GPU through a
// ResourceClaimTemplate scales the DRA group from zero with exactly one
// node per pod: the autoscaler reads the claims, the DeviceClass and the
// template's ResourceSlices, counts the new nodes as upcoming until their
// slices are published, and then sees the devices the scheduler allocated.
// Scaled to zero, the pods' claims go and the idle nodes are removed; the
// recorded loops, DRA objects included, replay to the same plans.
func TestDRAScaleUpFromZero(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	if _, err := c.Client.Discovery().ServerResourcesForGroupVersion(resourceapi.SchemeGroupVersion.String()); err != nil {
		t.Fatalf("the local API server does not serve %s: %v", resourceapi.SchemeGroupVersion, err)
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com"`}}}}}
	if _, err := c.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: "default"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}}}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := fastOptions()
	var record bytes.Buffer
	recorder := looprecord.NewRecorder(&record)
	o.Recorder = recorder
	a := c.StartAutoscaler(t, draKwokConfig(t), o)
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, draDeployment("trainer", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpuNodes := func() int { return len(groupNodes(t, c.Client, "dra-a10g")) }
	cpuNodes := func() int { return len(groupNodes(t, c.Client, "cpu")) }
	eventually(t, 120*time.Second, "both pods to run", func() bool { return runningPods(t, c.Client, "trainer") == 2 })
	if peak := maxDuring(6*time.Second, gpuNodes); peak != 2 || gpuNodes() != 2 {
		t.Fatalf("DRA GPU nodes peaked at %d for two pods claiming one GPU each (%d now), want exactly 2", peak, gpuNodes())
	}
	if n := cpuNodes(); n != 0 {
		t.Fatalf("%d CPU nodes added for pods that claim GPUs", n)
	}
	claims, err := c.Client.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, cl := range claims.Items {
		if a := cl.Status.Allocation; a != nil && len(a.Devices.Results) == 1 {
			nodes[a.Devices.Results[0].Pool] = true
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("%d claims allocated in %d pools, want one GPU on each of 2 nodes", len(claims.Items), len(nodes))
	}

	c.ScaleDeployment(t, "default", "trainer", 0)
	eventually(t, 90*time.Second, "the idle DRA nodes to be removed", func() bool { return gpuNodes() == 0 })
	a.Stop()
	replay(t, o, recorder, &record)
}

// draDeployment runs replicas pods that each claim one GPU through the
// one-gpu ResourceClaimTemplate.
func draDeployment(name string, replicas int32) *appsv1.Deployment {
	d := deployment(name, replicas, 0, "500m")
	spec := &d.Spec.Template.Spec
	tmpl := "one-gpu"
	spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Gi")
	return d
}
