package chart_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/internal/run"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// e2eKwokConfig has a GPU group and a CPU group, quick to provision.
const e2eKwokConfig = `provisioningDelay: 1s
devicePluginDelay: 2s
nodeGroups:
- name: gpu-a10g
  minSize: 0
  maxSize: 2
  instanceType: g5.xlarge
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
- name: cpu
  minSize: 0
  maxSize: 4
  instanceType: m5.xlarge
  zone: us-east-1a
  template:
    capacity: {cpu: "4", memory: 16Gi, pods: "110"}
`

// TestAutoscalerRBACOnCluster runs `gpuscale cluster-autoscaler` with the
// chart's kwok arguments as the chart's service account (impersonated, its
// RBAC applied from the rendered chart) on a real control plane, through a
// proxy that records every request the API server forbids. It scales a GPU
// group up (Node created, GPUs advertised by a status patch), drains a CPU
// node through the Eviction API and removes it, and removes the idle GPU
// node: all with no request refused, so the rules are enough for what the
// binary really calls. TestAutoscalerRBACIsExact shows they are no more.
func TestAutoscalerRBACOnCluster(t *testing.T) {
	helmBinary(t)
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()

	dir := t.TempDir()
	kwokFile, prioFile := filepath.Join(dir, "kwok.yaml"), filepath.Join(dir, "priorities.yaml")
	writeFile(t, kwokFile, e2eKwokConfig)
	writeFile(t, prioFile, "10:\n- .*\n")
	objs := render(t, "values-kwok.yaml", "--set-file", "clusterAutoscaler.kwok.config="+kwokFile,
		"--set", "clusterAutoscaler.extraArgs.expander=priority",
		"--set-file", "clusterAutoscaler.priorityExpander.priorities="+prioFile)
	applyAutoscalerObjects(t, c.Client, objs)

	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, autoscalerName), &d)
	user := "system:serviceaccount:" + namespace + ":" + d.Spec.Template.Spec.ServiceAccountName
	proxy := startRecordingProxy(t, c.Config, user)

	// The chart's arguments, then what makes the test quick.
	args := append(append([]string(nil), d.Spec.Template.Spec.Containers[0].Args[1:]...),
		"--kubeconfig="+proxy.kubeconfig(t), "--scan-interval=1s", "--scale-down-unneeded-time=3s",
		"--scale-down-delay-after-add=0s", "--max-drain-parallelism=0", "--address=127.0.0.1:0")
	fs := pflag.NewFlagSet("cluster-autoscaler", pflag.ContinueOnError)
	cfg := run.NewClusterAutoscalerOptions()
	cfg.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run.ClusterAutoscaler(runCtx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && runCtx.Err() == nil {
				t.Errorf("cluster-autoscaler: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("cluster-autoscaler did not stop within 30s")
		}
	})

	// Scale-up of the GPU group for a GPU pod.
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, workload("gpu-work", 1, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, proxy, 90*time.Second, "the GPU pod to run on a new GPU node", func() bool {
		return len(nodesOf(t, c.Client, "gpu-a10g")) == 1 && runningOn(t, c.Client, "gpu-work") != ""
	})

	// A CPU node whose pod can move to another CPU node is drained and removed.
	registerNode(t, c.Client, "cpu-a", "cpu")
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, workload("web", 1, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, proxy, 30*time.Second, "web to run on cpu-a", func() bool { return runningOn(t, c.Client, "web") == "cpu-a" })
	registerNode(t, c.Client, "cpu-b", "cpu")
	// A pod with no controller keeps cpu-b, so cpu-a is the one to go.
	anchor := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "anchor", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: "cpu-b", Containers: []v1.Container{{Name: "main", Image: "busybox"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, anchor, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, done, proxy, 90*time.Second, "cpu-a to be drained and removed, web moved to cpu-b", func() bool {
		_, err := c.Client.CoreV1().Nodes().Get(ctx, "cpu-a", metav1.GetOptions{})
		return err != nil && runningOn(t, c.Client, "web") == "cpu-b"
	})

	// The idle GPU node is removed.
	c.ScaleDeployment(t, "default", "gpu-work", 0)
	waitFor(t, done, proxy, 60*time.Second, "the idle GPU node to be removed", func() bool { return len(nodesOf(t, c.Client, "gpu-a10g")) == 0 })

	if _, err := c.Client.CoreV1().ConfigMaps(namespace).Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{}); err != nil {
		t.Errorf("status ConfigMap: %v", err)
	}
	lease, err := c.Client.CoordinationV1().Leases(namespace).Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("leader Lease %s/cluster-autoscaler not held: %v", namespace, err)
	}
	if denied := proxy.forbidden(); len(denied) > 0 {
		t.Errorf("the API server refused %d request(s) of %s:\n%s", len(denied), user, strings.Join(denied, "\n"))
	}
}

// applyAutoscalerObjects creates, as admin, the autoscaler's service
// account, RBAC and ConfigMaps from the rendered chart.
func applyAutoscalerObjects(t *testing.T, client kubernetes.Interface, objs objects) {
	t.Helper()
	ctx := context.Background()
	applied := 0
	for _, k := range objs.keys() {
		u := objs[k]
		if u.GetLabels()["app.kubernetes.io/component"] != "cluster-autoscaler" {
			continue
		}
		var err error
		switch u.GetKind() {
		case "ServiceAccount":
			var o v1.ServiceAccount
			objs.typed(t, k, &o)
			_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		case "ConfigMap":
			var o v1.ConfigMap
			objs.typed(t, k, &o)
			_, err = client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		case "ClusterRole":
			var o rbacv1.ClusterRole
			objs.typed(t, k, &o)
			_, err = client.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			objs.typed(t, k, &o)
			_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		case "Role":
			var o rbacv1.Role
			objs.typed(t, k, &o)
			_, err = client.RbacV1().Roles(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		case "RoleBinding":
			var o rbacv1.RoleBinding
			objs.typed(t, k, &o)
			_, err = client.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			t.Fatalf("applying %s: %v", k, err)
		}
		applied++
	}
	if applied < 7 { // account, 2 roles, 2 bindings, 2 ConfigMaps
		t.Fatalf("applied %d autoscaler objects from the chart, want the service account, RBAC and ConfigMaps", applied)
	}
}

// recordingProxy serves the API on plain HTTP on loopback, forwarding as
// one impersonated user, and remembers every 403.
type recordingProxy struct {
	server *httptest.Server
	mu     sync.Mutex
	denied []string
}

func startRecordingProxy(t *testing.T, admin *rest.Config, user string) *recordingProxy {
	t.Helper()
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	p.server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusForbidden {
				p.mu.Lock()
				p.denied = append(p.denied, resp.Request.Method+" "+resp.Request.URL.RequestURI())
				p.mu.Unlock()
			}
			return nil
		},
	})
	t.Cleanup(func() {
		p.server.CloseClientConnections()
		p.server.Close()
	})
	return p
}

func (p *recordingProxy) forbidden() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]string(nil), p.denied...)
	sort.Strings(out)
	return out
}

// kubeconfig writes a kubeconfig that reaches the cluster through the proxy.
func (p *recordingProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: %q}
users:
- name: chart-service-account
  user: {}
contexts:
- name: chart
  context: {cluster: proxy, user: chart-service-account}
current-context: chart
`, p.server.URL))
	return path
}

func workload(name string, replicas int32, gpu bool) *appsv1.Deployment {
	res := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}, Limits: v1.ResourceList{}}
	spec := v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: res}}}
	if gpu {
		one := resource.MustParse("1")
		res.Requests["nvidia.com/gpu"], res.Limits["nvidia.com/gpu"] = one, one
		spec.Containers[0].Resources = res
		spec.Tolerations = []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	}
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: spec}},
	}
}

// registerNode adds a Node of a kwok group, as if scaled up earlier; the
// kwok controller keeps it Ready.
func registerNode(t *testing.T, client kubernetes.Interface, name, group string) {
	t.Helper()
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{kwok.LabelNodeGroup: group, v1.LabelHostname: name, v1.LabelTopologyZone: "us-east-1a"},
			Annotations: map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}},
		Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func nodesOf(t *testing.T, client kubernetes.Interface, group string) []v1.Node {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kwok.LabelNodeGroup: group}).String()
	l, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// runningOn returns the node of the app's one running pod, "" when none is.
func runningOn(t *testing.T, client kubernetes.Interface, app string) string {
	t.Helper()
	l, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	node := ""
	for _, p := range l.Items {
		if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			if node != "" {
				return ""
			}
			node = p.Spec.NodeName
		}
	}
	return node
}

// waitFor polls cond until it holds, failing on timeout, when the
// autoscaler stops, or as soon as the API server refuses it a request.
func waitFor(t *testing.T, done <-chan error, proxy *recordingProxy, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("cluster-autoscaler stopped while waiting for %s: %v", what, err)
		default:
		}
		if denied := proxy.forbidden(); len(denied) > 0 {
			t.Fatalf("waiting for %s, the API server refused the chart's service account:\n%s", what, strings.Join(denied, "\n"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
