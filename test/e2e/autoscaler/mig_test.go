package autoscaler_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// migResource is the MIG profile the test's group is partitioned into
// (mixed strategy: each instance its own resource).
const migResource = v1.ResourceName("nvidia.com/mig-1g.10gb")

// A group of MIG-partitioned A100 nodes scales from zero for three pods
// that each ask for one 1g.10gb instance: one node (seven instances)
// holds them all. The new node registers without its partitions and
// advertises them 10 s later, as the MIG manager and device plugin do;
// all that time the node counts as upcoming, so no second node is bought
// and the pods do not go to the cheaper CPU group.
func TestMIGGroupScalesWithoutASecondNode(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	cfg, err := kwok.ParseConfig([]byte(`
provisioningDelay: 1s
devicePluginDelay: 10s
nodeGroups:
- name: mig-a100
  minSize: 0
  maxSize: 4
  instanceType: a2-highgpu-1g
  pricePerHour: 3.67
  zone: us-east-1a
  template:
    labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
    capacity: {cpu: "12", memory: 85Gi, pods: "110", nvidia.com/mig-1g.10gb: "7"}
` + cpuGroupYAML))
	if err != nil {
		t.Fatal(err)
	}
	a := c.StartAutoscaler(t, cfg, fastOptions())
	defer a.Stop()
	d := deployment("mig-infer", 3, 0, "500m")
	one := resource.MustParse("1")
	d.Spec.Template.Spec.Containers[0].Resources.Requests[migResource] = one
	d.Spec.Template.Spec.Containers[0].Resources.Limits[migResource] = one
	if _, err := c.Client.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	migNodes := func() int { return len(groupNodes(t, c.Client, "mig-a100")) }
	peak := 0
	eventually(t, 120*time.Second, "the three MIG pods to run", func() bool {
		peak = max(peak, migNodes())
		return runningPods(t, c.Client, "mig-infer") == 3
	})
	if peak = max(peak, maxDuring(5*time.Second, migNodes)); peak != 1 || migNodes() != 1 {
		t.Fatalf("MIG nodes peaked at %d for three pods of one 1g.10gb instance each (%d now), want exactly 1", peak, migNodes())
	}
	if n := len(groupNodes(t, c.Client, "cpu")); n != 0 {
		t.Fatalf("%d CPU nodes added for pods that ask for MIG instances", n)
	}
}
