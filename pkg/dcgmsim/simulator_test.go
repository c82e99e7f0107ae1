package dcgmsim

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// cluster: gpu-a has two T4s (one held by "trainer" at 100%), gpu-b one L4
// that "idle" holds, and a CPU node.
func newTestSimulator(t *testing.T, node string) (*Simulator, *fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	trainer := created(builder.Pod("trainer").GPU(1).OnNode("gpu-a").Annotation(AnnotationUtil, "100").Build(), 1)
	trainer.Status.Phase = corev1.PodRunning
	client := fake.NewClientset(
		builder.Node("gpu-a").GPU(2).Label(gpu.LabelGPUProduct, "Tesla-T4").Build(),
		builder.Node("gpu-b").GPU(1).Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build(),
		builder.Node("cpu").Build(),
		trainer,
		created(builder.Pod("idle").Namespace("ml").GPU(1).OnNode("gpu-b").Build(), 2),
		builder.Pod("web").CPU("1").OnNode("cpu").Build(),
	)
	clk := testingclock.NewFakeClock(t0)
	sim, err := New(Options{Client: client, Node: node, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return sim, client, clk
}

// series gathers one metric and returns its series by "Hostname/gpu", each
// as its label map plus the value under key "=value".
func series(t *testing.T, reg prometheus.Gatherer, name string) map[string]map[string]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			labels["=value"] = formatValue(m)
			out[labels["Hostname"]+"/"+labels["gpu"]] = labels
		}
	}
	return out
}

func formatValue(m *dto.Metric) string {
	v := m.GetGauge().GetValue()
	if m.Counter != nil {
		v = m.GetCounter().GetValue()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func TestSimulatorReportsEveryGPUWithItsPod(t *testing.T) {
	sim, _, _ := newTestSimulator(t, "")
	util := series(t, sim.Registry(), "DCGM_FI_DEV_GPU_UTIL")
	if got := keys(util); strings.Join(got, " ") != "gpu-a/0 gpu-a/1 gpu-b/0" {
		t.Fatalf("GPU series %v, want gpu-a/0 gpu-a/1 gpu-b/0", got)
	}
	held := util["gpu-a/0"]
	for k, want := range map[string]string{
		"=value": "100", "namespace": "default", "pod": "trainer", "container": "main",
		"modelName": "Tesla T4", "device": "nvidia0", "Hostname": "gpu-a", "UUID": gpuUUID("gpu-a", 0),
		"pci_bus_id": "00000000:10:00.0", "DCGM_FI_DRIVER_VERSION": DefaultDriverVersion,
	} {
		if held[k] != want {
			t.Errorf("gpu-a/0 %s = %q, want %q", k, held[k], want)
		}
	}
	free := util["gpu-a/1"]
	for _, k := range podLabels {
		if _, ok := free[k]; ok {
			t.Errorf("free GPU gpu-a/1 carries pod label %s: %v", k, free)
		}
	}
	if free["=value"] != "0" || free["device"] != "nvidia1" {
		t.Errorf("free GPU gpu-a/1 = %v, want util 0 on nvidia1", free)
	}
	if b := util["gpu-b/0"]; b["pod"] != "idle" || b["namespace"] != "ml" || b["modelName"] != "NVIDIA L4" || b["=value"] != "0" {
		t.Errorf("gpu-b/0 = %v, want ml/idle on an L4 at 0", b)
	}
	if held["UUID"] == util["gpu-a/1"]["UUID"] || !strings.HasPrefix(held["UUID"], "GPU-") || len(held["UUID"]) != 40 {
		t.Errorf("UUIDs %q and %q: want distinct GPU-<uuid>", held["UUID"], util["gpu-a/1"]["UUID"])
	}

	// Every default metric is there for every GPU.
	for _, m := range metrics {
		if got := len(series(t, sim.Registry(), m.name)); got != 3 {
			t.Errorf("%s: %d series, want 3", m.name, got)
		}
	}
	// The load model at 100% on a T4 and idle on an L4.
	for _, c := range []struct{ metric, gpu, want string }{
		{"DCGM_FI_DEV_POWER_USAGE", "gpu-a/0", "70"},
		{"DCGM_FI_DEV_POWER_USAGE", "gpu-b/0", "16"},
		{"DCGM_FI_DEV_FB_USED", "gpu-a/0", "12288"}, // 80% of 15360
		{"DCGM_FI_DEV_FB_FREE", "gpu-a/0", "2765"},  // 15360 - 307 reserved - 12288
		{"DCGM_FI_DEV_FB_USED", "gpu-a/1", "0"},
		{"DCGM_FI_DEV_FB_USED", "gpu-b/0", "1152"}, // 5% of 23034, held at rest
		{"DCGM_FI_DEV_SM_CLOCK", "gpu-a/0", "1590"},
		{"DCGM_FI_DEV_SM_CLOCK", "gpu-a/1", "300"},
		{"DCGM_FI_DEV_GPU_TEMP", "gpu-a/0", "75"},
		{"DCGM_FI_DEV_MEM_COPY_UTIL", "gpu-a/0", "50"},
	} {
		if got := series(t, sim.Registry(), c.metric)[c.gpu]["=value"]; got != c.want {
			t.Errorf("%s{%s} = %s, want %s", c.metric, c.gpu, got, c.want)
		}
	}
}

func TestSimulatorOneNode(t *testing.T) {
	sim, _, _ := newTestSimulator(t, "gpu-b")
	if got := keys(series(t, sim.Registry(), "DCGM_FI_DEV_GPU_UTIL")); strings.Join(got, " ") != "gpu-b/0" {
		t.Errorf("--node gpu-b: series %v, want only gpu-b/0", got)
	}
}

func TestSimulatorFollowsPodChanges(t *testing.T) {
	sim, client, clk := newTestSimulator(t, "")
	ctx := context.Background()

	// The annotation changes: the ramp starts when the change is seen.
	pod, err := client.CoreV1().Pods("ml").Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{AnnotationUtil: "80", AnnotationRamp: "40s"}
	if _, err := client.CoreV1().Pods("ml").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the annotation seen", func() bool { pl, ok := sim.Loads().Get("ml/idle"); return ok && pl.Target == 80 })
	clk.Step(10 * time.Second)
	if got := series(t, sim.Registry(), "DCGM_FI_DEV_GPU_UTIL")["gpu-b/0"]["=value"]; got != "20" {
		t.Errorf("10s into a 40s ramp to 80: util %s, want 20", got)
	}

	// The pod leaves: its GPU loses the pod labels, and a new pod of the
	// same name starts idle.
	if err := client.CoreV1().Pods("default").Delete(ctx, "trainer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "trainer's GPU freed", func() bool {
		_, held := series(t, sim.Registry(), "DCGM_FI_DEV_GPU_UTIL")["gpu-a/0"]["pod"]
		return !held
	})
	// The informer's store drops the pod before its delete handler runs.
	waitFor(t, "the deleted pod's load forgotten", func() bool {
		_, ok := sim.Loads().Get("default/trainer")
		return !ok
	})

	// A new pod on a new node shows up.
	if _, err := client.CoreV1().Nodes().Create(ctx, builder.Node("gpu-c").GPU(1).Build(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, builder.Pod("new").GPU(1).OnNode("gpu-c").Build(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new pod's GPU", func() bool {
		return series(t, sim.Registry(), "DCGM_FI_DEV_GPU_UTIL")["gpu-c/0"]["pod"] == "new"
	})
}

func TestSimulatorIntegratesEnergy(t *testing.T) {
	sim, _, clk := newTestSimulator(t, "")
	energy := func() string {
		return series(t, sim.Registry(), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")["gpu-a/0"]["=value"]
	}
	if got := energy(); got != "0" {
		t.Fatalf("first scrape: energy %s mJ, want 0", got)
	}
	clk.Step(10 * time.Second)
	if got := energy(); got != "700000" { // 70 W for 10 s
		t.Errorf("after 10 s at 70 W: energy %s mJ, want 700000", got)
	}
}

func TestSimulatorHTTP(t *testing.T) {
	sim, _, _ := newTestSimulator(t, "")
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	control := httptest.NewServer(sim.Control())
	defer control.Close()

	// The metrics endpoint does not take loads: that is the control
	// endpoint's, served on its own (loopback) listener.
	if code, _ := do(t, http.MethodPut, srv.URL+"/load/ml/idle", `{"util": 60}`); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("PUT /load on the metrics endpoint: %d, want it not served there", code)
	}
	code, body := do(t, http.MethodPut, control.URL+"/load/ml/idle", `{"util": 60}`)
	if code != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", code, body)
	}
	code, body = do(t, http.MethodGet, srv.URL+"/metrics", "")
	want := `modelName="NVIDIA L4",namespace="ml",pci_bus_id="00000000:10:00.0",pod="idle"} 60`
	if code != http.StatusOK || !strings.Contains(body, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge") || !strings.Contains(body, want) {
		t.Fatalf("GET /metrics: %d, want a DCGM_FI_DEV_GPU_UTIL gauge with %q:\n%s", code, want, body)
	}
	if strings.Contains(body, "go_goroutines") || strings.Contains(body, "process_") {
		t.Error("/metrics carries Go runtime or process metrics; dcgm-exporter's has none")
	}
	code, body = do(t, http.MethodGet, control.URL+"/load", "")
	if code != http.StatusOK || !strings.Contains(body, `"namespace":"ml","pod":"idle","util":60,"target":60`) {
		t.Errorf("GET /load: %d %s", code, body)
	}
}

func TestControlHandlerRefusesBadRequests(t *testing.T) {
	loads := NewLoadBook(testingclock.NewFakePassiveClock(t0))
	exists := func(ns, name string) bool { return ns == "default" && name == "p" }
	srv := httptest.NewServer(ControlHandler(loads, exists))
	defer srv.Close()
	for _, tc := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"util out of range", "/load/default/p", `{"util": 101}`, 400, "util: must be between 0 and 100, got 101"},
		{"util missing", "/load/default/p", `{"ramp": "5s"}`, 400, "util: required"},
		{"unknown field", "/load/default/p", `{"util": 5, "rmap": "5s"}`, 400, `unknown field "rmap"`},
		{"bad ramp", "/load/default/p", `{"util": 5, "ramp": "5 minutes"}`, 400, `ramp: not a duration, got "5 minutes"`},
		{"not JSON", "/load/default/p", `util=5`, 400, "body:"},
		{"unknown pod", "/load/default/nope", `{"util": 5}`, 404, "pod default/nope: not found"},
		{"ok with ramp", "/load/default/p", `{"util": 40, "ramp": "20s"}`, 204, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, http.MethodPut, srv.URL+tc.path, tc.body)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("PUT %s %s: %d %q, want %d containing %q", tc.path, tc.body, code, body, tc.code, tc.want)
			}
		})
	}
	if pl, ok := loads.Get("default/p"); !ok || pl.Target != 40 || pl.RampLeft != "20s" {
		t.Errorf("after the accepted PUT: %+v %v, want target 40 with 20s left", pl, ok)
	}
	if code, body := do(t, http.MethodGet, srv.URL+"/load/default/nope", ""); code != 404 {
		t.Errorf("GET unknown pod: %d %s, want 404", code, body)
	}
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func keys(m map[string]map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitFor polls cond: informer events reach the simulator asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// An API server that cannot be listed from leaves the start waiting; a
// warning says so at every interval, naming the server.
func TestStartSaysWhileItWaitsForTheAPIServer(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	var logs safeBuffer
	sim, err := New(Options{Client: client, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		SyncWarnInterval: 20 * time.Millisecond, APIServer: "https://10.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := sim.Start(ctx); err == nil {
		t.Fatal("Start returned nil without the caches synced")
	}
	out := logs.String()
	if !strings.Contains(out, "still waiting to list nodes and pods") || !strings.Contains(out, "apiServer=https://10.0.0.1:6443") {
		t.Errorf("no warning while waiting:\n%s", out)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
