// Package autoscaler_test runs gpuscale's live controller against a real
// local control plane (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok) with the kwok cloud provider.
package autoscaler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
)

const ns = "kube-system"

// cpuGroupYAML is the kwok config entry of the CPU group the tests' GPU
// pods must not be mistaken for: cheaper than any GPU group.
const cpuGroupYAML = `- name: cpu
  minSize: 0
  maxSize: 6
  instanceType: m5.xlarge
  pricePerHour: 0.192
  zone: us-east-1a
  template:
    capacity: {cpu: "4", memory: 16Gi, pods: "110"}
`

// kwokConfig is the kwok configuration of the GPU tests.
func kwokConfig(t *testing.T, devicePluginDelay time.Duration) *kwok.Config {
	t.Helper()
	text := fmt.Sprintf(`
provisioningDelay: 1s
devicePluginDelay: %s
nodeGroups:
- name: gpu-a10g
  minSize: 1
  maxSize: 4
  instanceType: g5.xlarge
  pricePerHour: 1.006
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
`+cpuGroupYAML, devicePluginDelay)
	cfg, err := kwok.ParseConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fastOptions shortens every wait so a test takes seconds, not minutes.
func fastOptions() controller.Options {
	o := controller.DefaultOptions()
	o.ScanInterval = time.Second
	o.Address = ""
	o.LeaderElection.Enabled = false
	o.Autoscaler.ScaleDown.UnneededTime = 3 * time.Second
	o.Autoscaler.ScaleDown.DelayAfterAdd = 0
	o.Autoscaler.ScaleDown.MaxDrainParallelism = 0
	o.Autoscaler.ScaleUp.Expander = "least-waste"
	o.MaxPodEvictionTime = 20 * time.Second
	o.Logger = slog.New(slog.NewTextHandler(logSink(), nil))
	return o
}

func deployment(name string, replicas int32, gpus int64, cpu string) *appsv1.Deployment {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	pod := v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{Requests: req, Limits: v1.ResourceList{}}}}}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		pod.Containers[0].Resources.Requests["nvidia.com/gpu"] = q
		pod.Containers[0].Resources.Limits["nvidia.com/gpu"] = q
		pod.Tolerations = []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	}
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: pod}},
	}
}

// groupNodes lists the nodes of a kwok group.
func groupNodes(t testing.TB, c kubernetes.Interface, group string) []v1.Node {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kwok.LabelNodeGroup: group}).String()
	l, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func runningPods(t testing.TB, c kubernetes.Interface, app string) int {
	t.Helper()
	l, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
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

// maxDuring samples f for d and returns the largest value seen.
func maxDuring(d time.Duration, f func() int) int {
	m := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		m = max(m, f())
	}
	return m
}

// minDuring samples f for d and returns the smallest value seen.
func minDuring(d time.Duration, f func() int) int {
	m := f()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		m = min(m, f())
	}
	return m
}

// logSink is where the in-process autoscalers log: stderr with
// E2E_LOG=1, nowhere otherwise.
func logSink() io.Writer {
	if os.Getenv("E2E_LOG") == "1" {
		return os.Stderr
	}
	return io.Discard
}
