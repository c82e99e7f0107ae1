package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

const (
	gpu         corev1.ResourceName = "nvidia.com/gpu"
	kwokTaint                       = "kwok.x-k8s.io/node"
	waitTimeout                     = 60 * time.Second
)

func TestLocalCluster(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("PodsRunOnKwokNode", func(t *testing.T) {
		node := createNode(ctx, t, c.Client, "kwok-node-0", corev1.ResourceList{})
		waitNodeReady(ctx, t, c.Client, node.Name)

		replicas := int32(3)
		labels := map[string]string{"app": "e2e-web"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-web", Namespace: metav1.NamespaceDefault},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: podSpec(corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					}),
				},
			},
		}
		if _, err := c.Client.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		var last string
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			pods, err := c.Client.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=e2e-web"})
			if err != nil {
				return false, err
			}
			running := 0
			last = ""
			for _, p := range pods.Items {
				last += fmt.Sprintf(" %s:%s@%q", p.Name, p.Status.Phase, p.Spec.NodeName)
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == node.Name {
					running++
				}
			}
			return running == int(replicas), nil
		})
		if err != nil {
			t.Fatalf("want %d pods Running on %s: %v; pods:%s", replicas, node.Name, err, last)
		}
		if out, err := c.Kubectl("get", "pods", "-o", "wide"); err != nil {
			t.Error(err)
		} else {
			t.Logf("kubectl get pods -o wide:\n%s", out)
		}
	})

	t.Run("GPUPodScheduledOnGPUNode", func(t *testing.T) {
		node := createNode(ctx, t, c.Client, "kwok-gpu-node-0", corev1.ResourceList{gpu: resource.MustParse("1")})
		waitNodeReady(ctx, t, c.Client, node.Name)

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-gpu", Namespace: metav1.NamespaceDefault},
			Spec: podSpec(corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"),
				gpu:                resource.MustParse("1"),
			}),
		}
		if _, err := c.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			var err error
			got, err = c.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Spec.NodeName != "" && got.Status.Phase == corev1.PodRunning, nil
		})
		if err != nil {
			t.Fatalf("GPU pod not Running: %v; node %q phase %s conditions %+v", err, got.Spec.NodeName, got.Status.Phase, got.Status.Conditions)
		}
		if got.Spec.NodeName != node.Name {
			t.Fatalf("GPU pod scheduled on %q, want %q", got.Spec.NodeName, node.Name)
		}
	})

	// The HPA tests route an APIService to a metrics adapter running as a
	// local process: an ExternalName Service "localhost" (Endpoints reject
	// loopback addresses, ExternalName does not).
	t.Run("APIServiceRoutesToLocalProcess", func(t *testing.T) {
		const group, version = "e2e.gpuscale.io", "v1"
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: group + "/" + version,
				APIResources: []metav1.APIResource{},
			})
		}))
		defer srv.Close()
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		var port int
		if _, err := fmt.Sscanf(u.Port(), "%d", &port); err != nil {
			t.Fatal(err)
		}

		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-adapter", Namespace: metav1.NamespaceDefault},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
		}
		if _, err := c.Client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		apiService := map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1",
			"kind":       "APIService",
			"metadata":   map[string]any{"name": version + "." + group},
			"spec": map[string]any{
				"group":                 group,
				"version":               version,
				"groupPriorityMinimum":  100,
				"versionPriority":       100,
				"insecureSkipTLSVerify": true,
				"service":               map[string]any{"namespace": svc.Namespace, "name": svc.Name, "port": port},
			},
		}
		body, _ := json.Marshal(apiService)
		rc := c.Client.Discovery().RESTClient()
		if out, err := rc.Post().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices").
			SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx); err != nil {
			t.Fatalf("create APIService: %v: %s", err, out)
		}
		var status string
		err = poll(ctx, func(ctx context.Context) (bool, error) {
			out, err := rc.Get().AbsPath("/apis/" + group + "/" + version).DoRaw(ctx)
			status = string(out)
			return err == nil, nil
		})
		if err != nil {
			got, _ := rc.Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/" + version + "." + group).DoRaw(ctx)
			t.Fatalf("GET /apis/%s/%s through the aggregator: %v (last %s); APIService: %s", group, version, err, status, got)
		}
	})

	// kube-apiserver must not listen on other addresses than loopback.
	t.Run("APIServerOnLoopbackOnly", func(t *testing.T) {
		u, err := url.Parse(c.Config.Host)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			t.Errorf("API server URL %s is not a loopback address", c.Config.Host)
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			t.Fatal(err)
		}
		tried := 0
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			tried++
			addr := net.JoinHostPort(ipn.IP.String(), u.Port())
			if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
				conn.Close()
				t.Errorf("kube-apiserver accepts connections on %s", addr)
			}
		}
		if tried == 0 {
			t.Skip("no non-loopback address to probe")
		}
	})
}

func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, cond)
}

func podSpec(requests corev1.ResourceList) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:      "main",
			Image:     "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limitsOf(requests)},
		}},
		NodeSelector: map[string]string{"type": "kwok"},
		Tolerations: []corev1.Toleration{{
			Key: kwokTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
	}
}

// limitsOf keeps extended resources (which need limit == request) in limits.
func limitsOf(requests corev1.ResourceList) corev1.ResourceList {
	if q, ok := requests[gpu]; ok {
		return corev1.ResourceList{gpu: q}
	}
	return nil
}

// createNode creates a kwok-managed Node as kwok's documentation does: the
// kwok.x-k8s.io/node=fake annotation and NoSchedule taint, label type=kwok.
func createNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, extra corev1.ResourceList) *corev1.Node {
	t.Helper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for k, v := range extra {
		capacity[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: kwokTaint, Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func waitNodeReady(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	var node *corev1.Node
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		var err error
		node, err = client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready: %v; conditions %+v", name, err, node.Status.Conditions)
	}
}
