// Package demo_test runs `gpuscale demo` in its quick mode on a real local
// control plane and checks every step of the walkthrough against the
// cluster itself: replica counts, pods, GPU nodes and the metrics API.
package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	cmv1beta1 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta1"

	"github.com/gpuscale/gpuscale/internal/demo"
	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

const (
	ns       = "default"
	app      = "gpu-hpa-test"
	gpuGroup = "gpu-a10g"
)

func TestDemoQuick(t *testing.T) {
	binDir := cluster.Tools(t, localcluster.AllTools()...)
	binary := buildGPUScale(t)

	opts := demo.Quick()
	opts.Binary, opts.BinDir, opts.Workdir = binary, binDir, cluster.Workdir()
	// Room for a third node: a duplicate order would show.
	opts.MaxGPUNodes = 3
	var out bytes.Buffer
	opts.Out = &out
	nodes := &nodeTracker{names: map[string]bool{}, now: map[string]bool{}}
	var stepsSeen []demo.Step
	var stressed string // the first pod, which carries the load
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopTracker := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopTracker()

	opts.AfterStep = func(step demo.Step, c *localcluster.Cluster) error {
		stepsSeen = append(stepsSeen, step)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if step == demo.StepDeployed {
			if err := nodes.start(c.Client, stop); err != nil {
				return err
			}
		}
		s, err := state(ctx, c.Client)
		if err != nil {
			return err
		}
		t.Logf("after %s: %s", step, s)
		switch step {
		case demo.StepDeployed:
			want(t, step, "deployment replicas", s.replicas, 1)
			want(t, step, "running pods", len(s.running), 1)
			want(t, step, "GPU nodes", len(s.gpuNodes), 1)
			if len(s.running) == 1 {
				stressed = s.running[0].Name
				want(t, step, "node of the pod is a GPU node", slices.Contains(s.gpuNodes, s.running[0].Spec.NodeName), true)
			}
		case demo.StepMetricServed:
			checkMetricList(ctx, t, c.Client, stressed)
		case demo.StepHPAApplied:
			want(t, step, "HPA current gpu_utilization", s.hpaCurrent, "0")
			want(t, step, "HPA current replicas", s.hpaReplicas, 1)
		case demo.StepScaledOut:
			want(t, step, "deployment replicas", s.replicas, 2)
			want(t, step, "HPA desired replicas", s.hpaDesired, 2)
			want(t, step, "pods pending for want of a GPU", len(s.unschedulable), 1)
		case demo.StepNodeAdded:
			want(t, step, "GPU nodes", len(s.gpuNodes), 2)
			want(t, step, "running pods", len(s.running), 2)
			if len(s.running) == 2 && s.running[0].Spec.NodeName == s.running[1].Spec.NodeName {
				t.Errorf("after %s: both pods on node %s", step, s.running[0].Spec.NodeName)
			}
			want(t, step, "HPA current gpu_utilization", s.hpaCurrent, "50")
		case demo.StepScaledIn:
			want(t, step, "deployment replicas", s.replicas, 1)
			want(t, step, "HPA current gpu_utilization", s.hpaCurrent, "0")
			want(t, step, "pods", len(s.pods), 1)
		case demo.StepNodeRemoved:
			want(t, step, "GPU nodes", len(s.gpuNodes), 1)
			want(t, step, "running pods", len(s.running), 1)
			if len(s.running) == 1 {
				want(t, step, "node of the remaining pod is the GPU node left", slices.Contains(s.gpuNodes, s.running[0].Spec.NodeName), true)
			}
		}
		if step == demo.StepNodeRemoved {
			stopTracker() // before the demo deletes the cluster
		}
		if t.Failed() {
			return fmt.Errorf("cluster state after %s is not the walkthrough's", step)
		}
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	res, err := demo.Run(ctx, opts)
	if err != nil || t.Failed() {
		t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("demo output:\n%s", out.String())

	if !slices.Equal(stepsSeen, demo.Steps()) {
		t.Errorf("steps %v, want %v", stepsSeen, demo.Steps())
	}
	seen, most := nodes.record()
	if len(seen) != 2 || most != 2 {
		t.Errorf("GPU nodes seen %v (most at once %d), want exactly 2: one for each pod, no duplicate", seen, most)
	}
	if !slices.Equal(res.Nodes.Seen, seen) || res.Nodes.Max != most {
		t.Errorf("the demo reports nodes %v (max %d), the cluster showed %v (max %d)", res.Nodes.Seen, res.Nodes.Max, seen, most)
	}
	if len(res.Nodes.Removed) != 1 || !slices.Contains(seen, res.Nodes.Removed[0]) {
		t.Errorf("nodes removed %v, want one of %v", res.Nodes.Removed, seen)
	}
	if !slices.Equal(res.HPAReplicas, []int32{1, 2, 1}) {
		t.Errorf("HPA replicas went %v, want 1, 2, 1", res.HPAReplicas)
	}
	// The guide's table: its header and the 100/30, 50/30 and 0/30 lines.
	for _, line := range []string{"NAME           REFERENCE                 TARGETS", "Deployment/gpu-hpa-test   100/30", "Deployment/gpu-hpa-test   50/30", "Deployment/gpu-hpa-test   0/30"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
	if _, err := os.Stat(res.Kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s still there after the demo (stat: %v): not cleaned up", res.Kubeconfig, err)
	}
}

// buildGPUScale builds the binary whose commands the demo runs.
func buildGPUScale(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "gpuscale")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gpuscale")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gpuscale: %v\n%s", err, out)
	}
	return bin
}

func want[T comparable](t *testing.T, step demo.Step, what string, got, wanted T) {
	t.Helper()
	if got != wanted {
		t.Errorf("after %s: %s = %v, want %v", step, what, got, wanted)
	}
}

// clusterState is what the test reads from the API server after a step.
type clusterState struct {
	replicas                int32
	pods, running           []v1.Pod
	unschedulable           []v1.Pod
	gpuNodes                []string
	hpaCurrent              string
	hpaReplicas, hpaDesired int32
}

func (s clusterState) String() string {
	var pods []string
	for _, p := range s.pods {
		pods = append(pods, fmt.Sprintf("%s %s@%q", p.Name, p.Status.Phase, p.Spec.NodeName))
	}
	return fmt.Sprintf("replicas %d; pods [%s]; GPU nodes %v; HPA current %q replicas %d desired %d",
		s.replicas, strings.Join(pods, ", "), s.gpuNodes, s.hpaCurrent, s.hpaReplicas, s.hpaDesired)
}

func state(ctx context.Context, c kubernetes.Interface) (clusterState, error) {
	var s clusterState
	d, err := c.AppsV1().Deployments(ns).Get(ctx, app, metav1.GetOptions{})
	if err != nil {
		return s, err
	}
	s.replicas = *d.Spec.Replicas
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		s.pods = append(s.pods, p)
		if p.Status.Phase == v1.PodRunning {
			s.running = append(s.running, p)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable {
				s.unschedulable = append(s.unschedulable, p)
			}
		}
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.LabelNodeGroup + "=" + gpuGroup})
	if err != nil {
		return s, err
	}
	for _, n := range nodes.Items {
		s.gpuNodes = append(s.gpuNodes, n.Name)
	}
	h, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, app, metav1.GetOptions{})
	if err == nil {
		s.hpaReplicas, s.hpaDesired = h.Status.CurrentReplicas, h.Status.DesiredReplicas
		if len(h.Status.CurrentMetrics) > 0 && h.Status.CurrentMetrics[0].Pods != nil && h.Status.CurrentMetrics[0].Pods.Current.AverageValue != nil {
			s.hpaCurrent = h.Status.CurrentMetrics[0].Pods.Current.AverageValue.String()
		}
	}
	return s, nil
}

// checkMetricList reads the guide's raw custom metrics request.
func checkMetricList(ctx context.Context, t *testing.T, c kubernetes.Interface, pod string) {
	t.Helper()
	body, err := c.Discovery().RESTClient().Get().AbsPath("/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_utilization").DoRaw(ctx)
	if err != nil {
		t.Errorf("custom metrics API: %v: %s", err, body)
		return
	}
	var list cmv1beta1.MetricValueList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Errorf("not a MetricValueList: %v: %s", err, body)
		return
	}
	if list.Kind != "MetricValueList" || len(list.Items) != 1 {
		t.Errorf("want a MetricValueList with one item, got %s", body)
		return
	}
	it := list.Items[0]
	if it.DescribedObject.Kind != "Pod" || it.DescribedObject.Namespace != ns || it.DescribedObject.Name != pod ||
		it.MetricName != "gpu_utilization" || it.Value.String() != "0" {
		t.Errorf("item %+v, want pod %s/%s gpu_utilization 0", it, ns, pod)
	}
}

// nodeTracker records every GPU node that appears and the most at once.
type nodeTracker struct {
	mu    sync.Mutex
	names map[string]bool
	order []string
	now   map[string]bool
	most  int
}

func (n *nodeTracker) start(c kubernetes.Interface, stop <-chan struct{}) error {
	f := informers.NewSharedInformerFactory(c, 0)
	inf := f.Core().V1().Nodes().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			node, ok := obj.(*v1.Node)
			if !ok || node.Labels[kwok.LabelNodeGroup] != gpuGroup {
				return
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if !n.names[node.Name] {
				n.names[node.Name] = true
				n.order = append(n.order, node.Name)
			}
			n.now[node.Name] = true
			n.most = max(n.most, len(n.now))
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				n.mu.Lock()
				delete(n.now, node.Name)
				n.mu.Unlock()
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(stop)
	f.WaitForCacheSync(stop)
	return nil
}

func (n *nodeTracker) record() ([]string, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.order), n.most
}
