// Package explain_test runs `gpuscale explain` against a real local control
// plane with gpuscale's autoscaler running in the test process (kwok cloud
// provider), and checks each answer.
package explain_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// ns holds the autoscaler's status ConfigMap.
const ns = "kube-system"

// kwokGroups: two GPU groups that start empty (least-waste prefers the
// small one for a one-GPU pod) and a CPU group whose nodes the test
// registers itself.
const kwokGroups = `
provisioningDelay: 1s
nodeGroups:
- name: gpu
  minSize: 0
  maxSize: 2
  instanceType: g5.xlarge
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
- name: gpu-big
  minSize: 0
  maxSize: 1
  instanceType: p4d.24xlarge
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a100}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "8"}
- name: cpu
  minSize: 0
  maxSize: 4
  instanceType: m5.xlarge
  zone: us-east-1a
  template:
    capacity: {cpu: "4", memory: 16Gi, pods: "110"}
`

// startAutoscaler runs the live controller in the test process until the
// test ends, with the least-waste expander, and returns the loopback
// address of its /metrics. Unneeded nodes go after 2 s, and 3 s after a
// scale-up at the earliest: the nodes the test asks to be kept are kept by
// their pods.
func startAutoscaler(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	cfg, err := kwok.ParseConfig([]byte(kwokGroups))
	if err != nil {
		t.Fatal(err)
	}
	o := controller.DefaultOptions()
	o.ScanInterval = time.Second
	o.Address = freeAddress(t)
	o.LeaderElection.Enabled = false
	o.Autoscaler.ScaleDown.UnneededTime = 2 * time.Second
	o.Autoscaler.ScaleDown.DelayAfterAdd = 3 * time.Second
	o.Autoscaler.ScaleUp.Expander = "least-waste"
	var sink io.Writer = io.Discard
	if os.Getenv("E2E_LOG") == "1" {
		sink = os.Stderr
	}
	o.Logger = slog.New(slog.NewTextHandler(sink, nil))
	c.StartAutoscaler(t, cfg, o)
	return o.Address
}

// freeAddress is a loopback address with a port free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// cpuNode registers a node of the kwok "cpu" group.
func cpuNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{kwok.LabelNodeGroup: "cpu", v1.LabelHostname: name, v1.LabelTopologyZone: "us-east-1a"},
			Annotations: map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func container(cpu string, gpus int64) v1.Container {
	c := v1.Container{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}, Limits: v1.ResourceList{}}}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		c.Resources.Requests["nvidia.com/gpu"] = q
		c.Resources.Limits["nvidia.com/gpu"] = q
	}
	return c
}

// barePod creates a pod without a controller, on node when node is set.
func barePod(t *testing.T, c kubernetes.Interface, name, node, cpu string) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{container(cpu, 0)}}}
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pinnedReplicaSet runs one replicated pod bound to node.
func pinnedReplicaSet(t *testing.T, c kubernetes.Interface, name, node string) {
	t.Helper()
	one := int32(1)
	lbl := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{container("100m", 0)}}}}}
	if _, err := c.AppsV1().ReplicaSets("default").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// gpuDeployment runs replicas pods of one GPU each.
func gpuDeployment(t *testing.T, c kubernetes.Interface, name string, replicas int32) {
	t.Helper()
	lbl := map[string]string{"app": name}
	spec := v1.PodSpec{Containers: []v1.Container{container("500m", 1)},
		Tolerations: []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: spec}}}
	if _, err := c.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
