package hpa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// envOptions shape the environment of a test.
type envOptions struct {
	// GPUNodes kwok nodes with GPUsPerNode nvidia.com/gpu each.
	GPUNodes, GPUsPerNode int
	// ScrapeInterval of Prometheus.
	ScrapeInterval time.Duration
	// ControllerManagerArgs are extra kube-controller-manager flags.
	ControllerManagerArgs []string
	// Scrape, when set, adds Prometheus jobs; it runs once the cluster is
	// up, before Prometheus starts.
	Scrape func(t testing.TB, e *env) []localcluster.ScrapeJob
}

// env is a local control plane with GPU nodes, dcgm-sim, Prometheus and,
// once startAdapter has run, the metrics adapter behind the aggregator.
type env struct {
	c       *cluster.Cluster
	sim     *dcgmsim.Simulator
	simAddr string
	prom    *localcluster.Prometheus
	promAPI promv1.API
	adapter *localcluster.Process
}

// newEnv starts everything but the adapter. It skips as cluster.Start does.
func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	promBin := cluster.Tools(t, localcluster.PrometheusTool)
	e := &env{c: cluster.Start(t, cluster.Options{ControllerManagerArgs: opts.ControllerManagerArgs})}
	ctx := context.Background()

	for i := 0; i < opts.GPUNodes; i++ {
		e.createGPUNode(t, fmt.Sprintf("gpu-node-%d", i), opts.GPUsPerNode)
	}

	// dcgm-sim in this process, as dcgm-exporter would run beside the nodes.
	sim, err := dcgmsim.New(dcgmsim.Options{Client: e.c.Client})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Serve(simCtx, ln, nil) }()
	t.Cleanup(func() {
		stopSim()
		if err := <-simDone; err != nil {
			t.Errorf("dcgm-sim: %v", err)
		}
	})
	e.sim, e.simAddr = sim, ln.Addr().String()

	// Prometheus scrapes dcgm-sim as kube-prometheus-stack scrapes the GPU
	// operator's dcgm-exporter through its ServiceMonitor: target labels
	// namespace/pod/container win, the exporter's own arrive as exported_*.
	jobs := []localcluster.ScrapeJob{localcluster.DCGMExporterJob(e.simAddr)}
	if opts.Scrape != nil {
		jobs = append(jobs, opts.Scrape(t, e)...)
	}
	e.prom, err = localcluster.StartPrometheus(ctx, localcluster.PrometheusOptions{
		BinDir:         promBin,
		Dir:            filepath.Join(t.TempDir(), "prometheus"),
		ScrapeInterval: opts.ScrapeInterval,
		Jobs:           jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", e.prom.LogTail(30))
		}
		_ = e.prom.Stop()
	})
	client, err := promapi.NewClient(promapi.Config{Address: e.prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	e.promAPI = promv1.NewAPI(client)
	return e
}

// createGPUNode creates a kwok-managed node with GPUs, tainted and labelled
// as a GPU node pool is (nvidia.com/gpu=present:NoSchedule, the product
// label of GPU feature discovery), so the walkthrough's Deployment, which
// tolerates nvidia.com/gpu, runs on it unchanged.
func (e *env) createGPUNode(t testing.TB, name string, gpus int) {
	t.Helper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1100"),
		gpu.ResourceName:      *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				gpu.LabelGPUProduct: "Tesla-T4",
			},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := e.c.Client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startAdapter builds gpuscale, runs `gpuscale metrics-adapter` with
// configFile (relative to this package) against Prometheus, registers it
// with the aggregator and returns its port.
func (e *env) startAdapter(t testing.TB, configFile string) int {
	t.Helper()
	bin := buildGPUScale(t)
	configFile, err := filepath.Abs(configFile)
	if err != nil {
		t.Fatal(err)
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e.adapter, err = localcluster.StartProcess(localcluster.ProcessOptions{
		Name: "metrics-adapter",
		Path: bin,
		Args: []string{"metrics-adapter",
			"--secure-port=" + fmt.Sprint(port), "--bind-address=127.0.0.1", "--cert-dir=" + filepath.Join(dir, "certs"),
			"--lister-kubeconfig=" + e.c.Kubeconfig, "--authentication-kubeconfig=" + e.c.Kubeconfig,
			"--authorization-kubeconfig=" + e.c.Kubeconfig,
			"--prometheus-url=" + e.prom.URL, "--config=" + configFile,
		},
		LogDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("metrics-adapter log:\n%s", e.adapter.LogTail(40))
		}
		_ = e.adapter.Stop()
	})
	e.registerAdapter(t, port)
	return port
}

// registerAdapter routes the metrics API groups to the adapter on port
// (metricsadapter.RegisterLocal) and lets the HPA controller read them, as
// the adapter's manifests do.
func (e *env) registerAdapter(t testing.TB, port int) {
	t.Helper()
	ctx := context.Background()
	client := e.c.Client
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuscale-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"custom.metrics.k8s.io", "external.metrics.k8s.io"},
			Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"},
		}},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuscale-metrics-reader-hpa"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kube-system", Name: "horizontal-pod-autoscaler"}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := metricsadapter.RegisterLocal(ctx, dyn, metav1.NamespaceSystem, port); err != nil {
		t.Fatal(err)
	}

	rc := client.Discovery().RESTClient()
	var last string
	err = poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		out, err := rc.Get().AbsPath("/apis/custom.metrics.k8s.io/v1beta1").DoRaw(ctx)
		last = fmt.Sprintf("%v %s", err, out)
		return err == nil, nil
	})
	if err != nil {
		got, _ := rc.Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.custom.metrics.k8s.io").DoRaw(ctx)
		t.Fatalf("custom.metrics.k8s.io/v1beta1 not served through the aggregator: %v (last: %s); APIService: %s", err, last, got)
	}
}

// raw GETs path through kube-apiserver, as `kubectl get --raw` does.
func (e *env) raw(ctx context.Context, path string) ([]byte, error) {
	return e.c.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
}

// promValue is the value of an instant query returning one sample.
func (e *env) promValue(ctx context.Context, query string) (float64, model.Vector, error) {
	v, _, _, err := e.promAPI.Query(ctx, query, time.Now())
	if err != nil {
		return 0, nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return 0, nil, fmt.Errorf("%s: got %s, want a vector", query, v.Type())
	}
	if len(vec) != 1 {
		return 0, vec, fmt.Errorf("%s: %d samples, want 1", query, len(vec))
	}
	return float64(vec[0].Value), vec, nil
}

// buildGPUScale builds ./cmd/gpuscale once per test binary.
func buildGPUScale(t testing.TB) string {
	t.Helper()
	gpuscaleOnce.Do(func() {
		root, err := localcluster.RepoRoot()
		if err != nil {
			gpuscaleErr = err
			return
		}
		dir, err := os.MkdirTemp("", "gpuscale-e2e-hpa-bin-")
		if err != nil {
			gpuscaleErr = err
			return
		}
		gpuscaleBin = filepath.Join(dir, "gpuscale")
		cmd := exec.Command("go", "build", "-o", gpuscaleBin, "./cmd/gpuscale")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			gpuscaleErr = fmt.Errorf("go build ./cmd/gpuscale: %v\n%s", err, out)
		}
	})
	if gpuscaleErr != nil {
		t.Fatal(gpuscaleErr)
	}
	return gpuscaleBin
}

// poll runs cond every 100 ms until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("not within %v", timeout)
	}
	return err
}
