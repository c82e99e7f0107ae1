package autoscaler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
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

// controlled gives a pod a controller owner so that the no-controller rule
// does not apply (the owner does not have to exist for the drain rules).
func controlled(p *v1.Pod) {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.Name + "-rs", UID: types.UID("0f0f0f0f-0000-4000-8000-" + fmt.Sprintf("%012d", len(p.Name))), Controller: &yes}}
}

// Each blocking rule keeps its node on a real cluster: a PodDisruptionBudget
// with no disruption allowed, safe-to-evict "false", and a pod without a
// controller. A node whose only pod may move is removed, so the rules, not
// a quiet autoscaler, are what keep the others.
func TestDrainRulesKeepNodes(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	for _, n := range []string{"pdb-node", "safe-node", "bare-node", "free-node", "spare-node"} {
		cpuNode(t, c.Client, n)
	}
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	barePod(t, c.Client, "guarded", "pdb-node", controlled)
	barePod(t, c.Client, "precious", "safe-node", func(p *v1.Pod) {
		controlled(p)
		p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
	})
	barePod(t, c.Client, "orphan", "bare-node", nil)
	barePod(t, c.Client, "movable", "free-node", controlled)
	barePod(t, c.Client, "anchor", "spare-node", controlled)
	eventually(t, 30*time.Second, "the PDB to report no allowed disruption", func() bool {
		p, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0
	})

	startAutoscaler(t, c, kwokConfig(t, 0), fastOptions())
	exists := func(name string) bool {
		_, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}
	// free-node and spare-node each hold one movable pod: one of them goes,
	// its pod moving to the other.
	eventually(t, 60*time.Second, "a node whose pod may move to be removed", func() bool {
		return !exists("free-node") || !exists("spare-node")
	})
	if low := minDuring(10*time.Second, func() int {
		n := 0
		for _, name := range []string{"pdb-node", "safe-node", "bare-node"} {
			if exists(name) {
				n++
			}
		}
		return n
	}); low != 3 {
		t.Fatal("a node kept by a drain rule was removed")
	}
	status, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"guarded", "precious", "orphan"} {
		if !strings.Contains(status.Data["status"], want) {
			t.Errorf("status ConfigMap does not say which pod keeps its node (%s):\n%s", want, status.Data["status"])
		}
	}
}

// A crash in the middle of a removal leaves the node tainted
// ToBeDeletedByClusterAutoscaler; the next autoscaler to start takes the
// taint off, and the node's pods are all still there.
func TestRestartRemovesStrandedTaints(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	stranded := v1.Taint{Key: scaledown.TaintToBeDeleted, Value: "1700000000", Effect: v1.TaintEffectNoSchedule}
	cpuNode(t, c.Client, "half-drained", stranded)
	cpuNode(t, c.Client, "busy")
	for i := 0; i < 3; i++ {
		barePod(t, c.Client, fmt.Sprintf("keep-%d", i), "half-drained", func(p *v1.Pod) {
			p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		})
	}
	startAutoscaler(t, c, kwokConfig(t, 0), fastOptions())
	eventually(t, 30*time.Second, "the stranded taint to be removed", func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "half-drained", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, tt := range n.Spec.Taints {
			if tt.Key == scaledown.TaintToBeDeleted {
				return false
			}
		}
		return true
	})
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=half-drained"})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("pods on the node after restart: %d (%v), want 3", len(pods.Items), err)
	}
}
