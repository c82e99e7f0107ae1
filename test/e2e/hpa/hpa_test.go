package hpa

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
)

const (
	// scrapeInterval of Prometheus in these tests.
	scrapeInterval = 2 * time.Second
	// downscaleStabilization replaces the HPA's 5-minute default.
	downscaleStabilization = 15 * time.Second
	podsPath               = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/%s/pods/*/gpu_utilization"
)

// TestGPUHPAWalkthrough runs the walkthrough's steps on real components:
// dcgm-sim scraped by Prometheus with the walkthrough's relabelling, the
// adapter with its rules verbatim, and the HPA controller of
// kube-controller-manager scaling the walkthrough's Deployment 1 -> 2 -> 1.
func TestGPUHPAWalkthrough(t *testing.T) {
	e := newEnv(t, envOptions{
		GPUNodes: 2, GPUsPerNode: 1, ScrapeInterval: scrapeInterval,
		ControllerManagerArgs: []string{"--horizontal-pod-autoscaler-downscale-stabilization=" + downscaleStabilization.String()},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// The adapter starts before any GPU pod exists: no series match its rule
	// yet, so everything it serves below is found without a relist.
	e.startAdapter(t, "../../../examples/metrics-adapter/gpu-utilization-values.yaml")

	dep, hpa := walkthroughObjects(t, metav1.NamespaceDefault, "gpu-hpa-test")
	createDeployment(ctx, t, e, dep)
	pod := runningPods(ctx, t, e, dep.Namespace, dep.Name, 1, time.Minute)[0]

	if !t.Run("1-PrometheusScrapesDCGMSimWithExportedLabels", func(t *testing.T) {
		var vec model.Vector
		err := poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			_, vec, err = e.promValue(ctx, `DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}`)
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("the GPU pod's series never reached Prometheus: %v (last %v)", err, vec)
		}
		node := podNode(ctx, t, e, dep.Namespace, pod)
		want := model.LabelSet{
			"exported_namespace": "default", "exported_pod": model.LabelValue(pod), "exported_container": "cuda-test",
			"namespace": "nvidia-gpu-operator", "pod": "nvidia-dcgm-exporter-local", "container": "nvidia-dcgm-exporter",
			"modelName": "Tesla T4", "Hostname": model.LabelValue(node), "gpu": "0", "device": "nvidia0",
		}
		for k, v := range want {
			if got := vec[0].Metric[k]; got != v {
				t.Errorf("label %s = %q, want %q (series %v)", k, got, v, vec[0].Metric)
			}
		}
		if vec[0].Value != 0 {
			t.Errorf("idle pod: DCGM_FI_DEV_GPU_UTIL = %v, want 0", vec[0].Value)
		}
		// The other node's GPU is free: a series without pod labels.
		if n, _, err := e.promValue(ctx, `count(DCGM_FI_DEV_GPU_UTIL{exported_pod=""})`); err != nil || n != 1 {
			t.Errorf("free GPU series: %v %v, want 1", n, err)
		}
	}) {
		return
	}

	if !t.Run("2-CustomMetricsAPIReturnsSeedShape", func(t *testing.T) {
		// Prometheus has the series (step 1): the first request must find it.
		body, err := e.raw(ctx, fmt.Sprintf(podsPath, dep.Namespace))
		if err != nil {
			t.Fatalf("kubectl get --raw %s: %v: %s", fmt.Sprintf(podsPath, dep.Namespace), err, body)
		}
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, body, "", "    ")
		t.Logf("kubectl get --raw %q:\n%s", fmt.Sprintf(podsPath, dep.Namespace), pretty.String())
		checkSeedShape(t, body, dep.Namespace, []string{pod}, "0")
	}) {
		return
	}

	if !t.Run("3-HPAScalesUpAtLoad100AndDownAtLoad0", func(t *testing.T) {
		createHPA(ctx, t, e, hpa)
		waitHPA(ctx, t, e, hpa.Namespace, hpa.Name, time.Minute, "0/30 with 1 replica",
			func(s hpaState) bool { return averageIs(s, 0) && s.Current == 1 })

		// Scale up: the stress step, as an annotation.
		start := time.Now()
		up := trackStages(ctx, start, loadChangeStages(t, e, dep.Namespace, pod, hpa.Name, 100, 2))
		setLoad(ctx, t, e, dep.Namespace, pod, 100)
		states := waitHPA(ctx, t, e, hpa.Namespace, hpa.Name, time.Minute, "2 desired replicas",
			func(s hpaState) bool { return s.Desired == 2 })
		if last := states[len(states)-1]; !averageIs(last, 100) {
			t.Errorf("scaled to 2 at %v, want 100/30", last)
		}
		up.wait()
		t.Logf("load 0 -> 100 until the HPA wants 2 replicas (since the annotation):\n%s", up.report())

		runningPods(ctx, t, e, dep.Namespace, dep.Name, 2, time.Minute)
		waitHPA(ctx, t, e, hpa.Namespace, hpa.Name, time.Minute, "50/30 with 2 replicas",
			func(s hpaState) bool { return averageIs(s, 50) && s.Current == 2 })
		expectKubectlHPA(t, e, hpa.Name, "50/30", "2")

		// Scale down: stop the stress.
		start = time.Now()
		down := trackStages(ctx, start, loadChangeStages(t, e, dep.Namespace, pod, hpa.Name, 0, 1))
		setLoad(ctx, t, e, dep.Namespace, pod, 0)
		states = waitHPA(ctx, t, e, hpa.Namespace, hpa.Name, time.Minute+downscaleStabilization, "1 replica",
			func(s hpaState) bool { return s.Desired == 1 && s.Current == 1 })
		sawZeroAtTwo := false
		for _, s := range states {
			sawZeroAtTwo = sawZeroAtTwo || (averageIs(s, 0) && s.Current == 2)
		}
		if !sawZeroAtTwo {
			t.Errorf("scale-down states %v: want 0/30 with 2 replicas before 1 (the stabilization window)", states)
		}
		down.wait()
		t.Logf("load 100 -> 0 until the HPA wants 1 replica (%v stabilization included):\n%s", downscaleStabilization, down.report())
		runningPods(ctx, t, e, dep.Namespace, dep.Name, 1, time.Minute)
		expectKubectlHPA(t, e, hpa.Name, "0/30", "1")
	}) {
		return
	}

	t.Run("4-NewDeploymentUsableWithinOneScrape", func(t *testing.T) {
		const ns = "ml-team"
		if _, err := e.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		dep, hpa := walkthroughObjects(t, ns, "gpu-hpa-new")
		createDeployment(ctx, t, e, dep)
		createHPA(ctx, t, e, hpa)
		pod := runningPods(ctx, t, e, ns, dep.Name, 1, time.Minute)[0]

		start := time.Now()
		var exported, scraped time.Duration
		if err := poll(ctx, time.Minute, func(context.Context) (bool, error) {
			for _, g := range e.sim.GPUs() {
				if g.Holder != nil && g.Holder.Namespace == ns && g.Holder.Pod == pod {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("dcgm-sim never reported %s/%s: %v", ns, pod, err)
		}
		exported = time.Since(start)
		query := fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{exported_namespace=%q,exported_pod=%q}`, ns, pod)
		if err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			_, _, err := e.promValue(ctx, query)
			return err == nil, nil
		}); err != nil {
			t.Fatalf("%s never in Prometheus: %v", query, err)
		}
		scraped = time.Since(start)

		// Once Prometheus has a sample, the adapter serves it at once: no
		// relist, no cache to wait for.
		body, err := e.raw(ctx, fmt.Sprintf(podsPath, ns))
		if err != nil {
			t.Fatalf("first request after the sample reached Prometheus: %v: %s", err, body)
		}
		checkSeedShape(t, body, ns, []string{pod}, "0")
		served := time.Since(start)

		waitHPA(ctx, t, e, ns, hpa.Name, time.Minute, "a metric value", func(s hpaState) bool { return s.Average != nil })
		t.Logf("new Deployment %s/%s, since its pod ran: in dcgm-sim %d ms, in Prometheus %d ms (scrape interval %v), served by the adapter %d ms, read by the HPA %d ms",
			ns, dep.Name, exported.Milliseconds(), scraped.Milliseconds(), scrapeInterval, served.Milliseconds(), time.Since(start).Milliseconds())
	})

	t.Run("DCGMSimCommandServesOneNode", func(t *testing.T) {
		checkDCGMSimCommand(ctx, t, e, "gpu-node-1")
	})
}

// checkDCGMSimCommand runs `gpuscale dcgm-sim --node` as a process against
// the cluster: it must serve that node's GPUs only, with the same holders as
// the in-process simulator sees.
func checkDCGMSimCommand(ctx context.Context, t *testing.T, e *env, node string) {
	bin := buildGPUScale(t)
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proc, err := localcluster.StartProcess(localcluster.ProcessOptions{
		Name: "dcgm-sim", Path: bin, LogDir: t.TempDir(),
		Args: []string{"dcgm-sim", "--kubeconfig=" + e.c.Kubeconfig, "--listen-address=" + addr, "--node=" + node, "--control-address="},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("dcgm-sim log:\n%s", proc.LogTail(30))
		}
		_ = proc.Stop()
	}()
	if err := proc.WaitHTTP(ctx, "http://"+addr+"/healthz"); err != nil {
		t.Fatal(err)
	}
	body, err := get(ctx, http.DefaultClient, "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var util []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "DCGM_FI_DEV_GPU_UTIL{") {
			util = append(util, line)
		}
	}
	var gpus []dcgmsim.GPU
	for _, g := range e.sim.GPUs() {
		if g.Node == node {
			gpus = append(gpus, g)
		}
	}
	if len(util) != len(gpus) || len(gpus) == 0 {
		t.Fatalf("--node %s: %d DCGM_FI_DEV_GPU_UTIL series, want %d:\n%s", node, len(util), len(gpus), body)
	}
	for _, g := range gpus {
		var line string
		for _, l := range util {
			if strings.Contains(l, fmt.Sprintf(`gpu="%d"`, g.Index)) {
				line = l
			}
		}
		want := []string{fmt.Sprintf(`Hostname=%q`, node), fmt.Sprintf(`device="nvidia%d"`, g.Index), `modelName="Tesla T4"`}
		if g.Holder != nil {
			want = append(want, fmt.Sprintf(`namespace=%q`, g.Holder.Namespace), fmt.Sprintf(`pod=%q`, g.Holder.Pod), `container="cuda-test"`)
		} else if strings.Contains(line, "pod=") {
			t.Errorf("free GPU %d carries pod labels: %s", g.Index, line)
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("GPU %d: series %q lacks %s", g.Index, line, w)
			}
		}
	}
}

func podNode(ctx context.Context, t testing.TB, e *env, ns, name string) string {
	t.Helper()
	p, err := e.c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

// expectKubectlHPA checks `kubectl get hpa NAME` shows targets and replicas
// as the walkthrough's output does.
func expectKubectlHPA(t testing.TB, e *env, name, targets, replicas string) {
	t.Helper()
	out, err := e.c.Kubectl("get", "hpa", name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get hpa %s:\n%s", name, out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	col := func(h string) string {
		for i, f := range header {
			if f == h && i < len(row) {
				return row[i]
			}
		}
		return ""
	}
	if col("TARGETS") != targets || col("REPLICAS") != replicas {
		t.Errorf("kubectl get hpa %s: TARGETS %q REPLICAS %q, want %s and %s:\n%s", name, col("TARGETS"), col("REPLICAS"), targets, replicas, out)
	}
	t.Logf("kubectl get hpa %s:\n%s", name, out)
}
