package autoscaler_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// gpu8Config is one group of 8-GPU kwok nodes.
func gpu8Config(t *testing.T) *kwok.Config {
	t.Helper()
	cfg, err := kwok.ParseConfig([]byte(`
provisioningDelay: 1s
nodeGroups:
- name: gpu-8
  minSize: 0
  maxSize: 4
  instanceType: p4d.24xlarge
  pricePerHour: 32.77
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a100}
    capacity: {cpu: "96", memory: 1152Gi, pods: "110", nvidia.com/gpu: "8"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gpu8Node registers an 8-GPU node of the group, as if scaled up earlier.
func gpu8Node(t *testing.T, c kubernetes.Interface, name string, unschedulable bool) {
	t.Helper()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("96"), v1.ResourceMemory: resource.MustParse("1152Gi"),
		v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{kwok.LabelNodeGroup: "gpu-8", v1.LabelHostname: name, v1.LabelTopologyZone: "us-east-1a",
				"k8s.amazonaws.com/accelerator": "nvidia-a100"},
			Annotations: map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}},
		Spec:   v1.NodeSpec{Unschedulable: unschedulable},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Two 8-GPU nodes each half used by a 4-GPU Deployment pod: 50% is not
// below the GPU threshold, so scale-down keeps both; consolidation moves
// one pod over and removes the emptied node. No pod is lost, and a
// PodDisruptionBudget that allows no disruption keeps both nodes.
func TestConsolidationPacksTwoHalfUsedGPUNodes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		minAvailable int32
		wantNodes    int
	}{{"pdb allows one disruption", 0, 1}, {"pdb allows none", 1, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.Start(t, cluster.Options{})
			ctx := context.Background()
			// a lands on n1 alone; then b on n2, with n1 cordoned.
			gpu8Node(t, c.Client, "gpu-n1", false)
			if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("a", 1, 4, "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "a to run", func() bool { return runningPods(t, c.Client, "a") == 1 })
			setUnschedulable(t, c.Client, "gpu-n1", true)
			gpu8Node(t, c.Client, "gpu-n2", false)
			if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("b", 1, 4, "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "b to run", func() bool { return runningPods(t, c.Client, "b") == 1 })
			setUnschedulable(t, c.Client, "gpu-n1", false)
			for _, app := range []string{"a", "b"} {
				floor := intstr.FromInt32(tc.minAvailable)
				pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
					Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &floor,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
				if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, 30*time.Second, "the budgets to be computed", func() bool {
				p, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "b", metav1.GetOptions{})
				return err == nil && p.Status.ExpectedPods == 1
			})
			o := fastOptions()
			o.Autoscaler.Consolidation.Enabled = true
			o.Autoscaler.Consolidation.StableTime = 2 * time.Second
			c.StartAutoscaler(t, gpu8Config(t), o)
			count := func() int { return len(groupNodes(t, c.Client, "gpu-8")) }
			if tc.wantNodes == 1 {
				eventually(t, 60*time.Second, "one half-used node to be consolidated away", func() bool { return count() == 1 })
			} else if low := minDuring(15*time.Second, count); low != 2 {
				t.Fatalf("a node went although no pod may be disrupted (%d left)", low)
			}
			eventually(t, 30*time.Second, "both pods to run", func() bool {
				return runningPods(t, c.Client, "a") == 1 && runningPods(t, c.Client, "b") == 1
			})
			if n := count(); n != tc.wantNodes {
				t.Fatalf("%d nodes, want %d", n, tc.wantNodes)
			}
		})
	}
}

func setUnschedulable(t *testing.T, c kubernetes.Interface, node string, on bool) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = on
	if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
