package autoscaler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// cpuNode registers a node of the kwok "cpu" group, as if scaled up earlier.
func cpuNode(t *testing.T, c kubernetes.Interface, name string, taints ...v1.Taint) {
	t.Helper()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{kwok.LabelNodeGroup: "cpu", v1.LabelHostname: name, v1.LabelTopologyZone: "us-east-1a"},
			Annotations: map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}},
		Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")},
		},
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// barePod places a pod straight on a node; mutate sets what makes it special.
func barePod(t *testing.T, c kubernetes.Interface, name, node string, mutate func(*v1.Pod)) {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "main", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	if mutate != nil {
		mutate(p)
	}
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pinnedReplicaSet runs one pod bound to node (spec.nodeName in the
// template): a pod with a real controller that must stay where it is put.
func pinnedReplicaSet(t *testing.T, c kubernetes.Interface, name, node string, annotations map[string]string) {
	t.Helper()
	one := int32(1)
	lbl := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl, Annotations: annotations},
				Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "main", Image: "busybox",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
			}},
	}
	if _, err := c.AppsV1().ReplicaSets("default").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Each blocking rule keeps its node on a real cluster: a PodDisruptionBudget
// with no disruption allowed, safe-to-evict "false", and a pod without a
// controller. Two other underused nodes, one holding a Deployment's pod,
// are removed, so the rules, not a quiet autoscaler, keep the others.
func TestDrainRulesKeepNodes(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	for _, n := range []string{"pdb-node", "safe-node", "bare-node", "free-node", "spare-node"} {
		cpuNode(t, c.Client, n)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pinnedReplicaSet(t, c.Client, "guarded", "pdb-node", nil)
	pinnedReplicaSet(t, c.Client, "precious", "safe-node", map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
	barePod(t, c.Client, "orphan", "bare-node", nil)
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("movable", 1, 0, "100m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the pods to run and the PDB to allow no disruption", func() bool {
		p, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0 &&
			runningPods(t, c.Client, "precious") == 1 && runningPods(t, c.Client, "movable") == 1
	})
	c.StartAutoscaler(t, kwokConfig(t, 0), fastOptions())
	exists := func(name string) bool {
		_, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}
	eventually(t, 60*time.Second, "the two nodes without blocking pods to be removed", func() bool {
		return !exists("free-node") && !exists("spare-node")
	})
	if low := minDuring(8*time.Second, func() int {
		n := 0
		for _, name := range []string{"pdb-node", "safe-node", "bare-node"} {
			if exists(name) {
				n++
			}
		}
		return n
	}); low != 3 {
		status, _ := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
		t.Fatalf("a node kept by a drain rule was removed: pdb-node %v, safe-node %v, bare-node %v\nstatus:\n%s",
			exists("pdb-node"), exists("safe-node"), exists("bare-node"), status.Data["status"])
	}
	eventually(t, 30*time.Second, "the moved Deployment pod to run again", func() bool { return runningPods(t, c.Client, "movable") == 1 })
	status, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"default/guarded-", "default/precious-", "default/orphan"} {
		if !strings.Contains(status.Data["status"], want) {
			t.Errorf("status ConfigMap does not say which pod keeps its node (%s):\n%s", want, status.Data["status"])
		}
	}
}
