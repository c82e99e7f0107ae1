package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gpuscale/gpuscale/examples"
	"github.com/gpuscale/gpuscale/internal/localcluster"
)

// startTimeout bounds the start of each component.
const startTimeout = 2 * time.Minute

// stack is every running part of the demo, stopped in reverse order.
type stack struct {
	opts    Options
	p       *printer
	cluster *localcluster.Cluster
	dir     string // the demo's own files: configuration and logs
	prom    *localcluster.Prometheus
	procs   []*localcluster.Process
	// loadURL is inference-sim's control endpoint (the inference story).
	loadURL string
}

func (s *stack) inference() bool { return s.opts.Story == StoryInference }

// start brings up the control plane, dcgm-sim, Prometheus, the metrics
// adapter and the node autoscaler. On error, what started is still in s
// for stop.
func (s *stack) start(ctx context.Context) error {
	binDir := s.opts.BinDir
	if binDir == "" {
		s.p.heading("Building or reusing the control plane and Prometheus (hack/build-tools.sh)")
		var err error
		if binDir, err = localcluster.EnsureTools(ctx, s.p, localcluster.AllTools()...); err != nil {
			return err
		}
		s.p.note("tools ready in %s", binDir)
	}

	s.p.heading("Starting the local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok) on 127.0.0.1")
	t0 := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir:  binDir,
		Workdir: s.opts.Workdir,
		Name:    "demo",
		ControllerManagerArgs: []string{
			"--horizontal-pod-autoscaler-downscale-stabilization=" + s.opts.DownscaleStabilization.String(),
		},
	})
	if err != nil {
		return err
	}
	s.cluster = c
	s.dir = filepath.Join(c.Dir, "gpuscale-demo")
	s.p.note("cluster %s ready in %s; HPA sync every 5s, downscale stabilization %s", c.Name, time.Since(t0).Round(100*time.Millisecond), s.opts.DownscaleStabilization)
	s.p.note("export KUBECONFIG=%s  (kubectl: %s)", c.Kubeconfig, filepath.Join(binDir, "kubectl"))

	metrics := s.startDCGMSim
	if s.inference() {
		metrics = s.startInferenceSim
	}
	for _, part := range []func(context.Context, string) error{metrics, s.startAdapter, s.startAutoscaler} {
		if err := part(ctx, binDir); err != nil {
			return err
		}
	}
	return nil
}

func (s *stack) startDCGMSim(ctx context.Context, binDir string) error {
	s.p.heading("Starting dcgm-sim (dcgm-exporter's metrics for every GPU; load from the pod annotation gpuscale.dev/simulated-gpu-util)")
	var addr string
	proc, err := s.childOnFreePort(ctx, "dcgm-sim", func(port int) (string, []string) {
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		// Loads are set by annotation; no control endpoint, so no second port.
		return "http://" + addr + "/metrics", []string{"dcgm-sim", "--kubeconfig=" + s.cluster.Kubeconfig, "--listen-address=" + addr, "--control-address="}
	})
	if err != nil {
		return err
	}
	s.p.note("dcgm-sim serving http://%s/metrics (pid %d)", addr, proc.Pid())

	s.p.heading("Starting Prometheus (scraping dcgm-sim every %s as kube-prometheus-stack scrapes dcgm-exporter)", s.opts.ScrapeInterval)
	if err := s.startPrometheus(ctx, binDir, localcluster.DCGMExporterJob(addr)); err != nil {
		return err
	}
	s.p.note("Prometheus at %s; labels namespace/pod of the GPU's pod arrive as exported_namespace/exported_pod", s.prom.URL)
	return nil
}

// startPrometheus starts the stack's Prometheus with one scrape job.
func (s *stack) startPrometheus(ctx context.Context, binDir string, job localcluster.ScrapeJob) error {
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var err error
	s.prom, err = localcluster.StartPrometheus(sctx, localcluster.PrometheusOptions{
		BinDir:         binDir,
		Dir:            filepath.Join(s.dir, "prometheus"),
		ScrapeInterval: s.opts.ScrapeInterval,
		Jobs:           []localcluster.ScrapeJob{job},
	})
	return err
}

func (s *stack) startAdapter(ctx context.Context, _ string) error {
	values := examples.GPUUtilizationAdapterValues
	if s.inference() {
		values = examples.VLLMAdapterValues
		s.p.heading("Starting the metrics adapter (examples/metrics-adapter/vllm-values.yaml: custom and external metrics in one process)")
	} else {
		s.p.heading("Starting the metrics adapter (the GPU guide's prometheus-adapter rules, unchanged)")
	}
	config := filepath.Join(s.dir, "adapter-values.yaml")
	// The values, verbatim; --prometheus-url points the adapter at the
	// local Prometheus instead of the values' in-cluster address.
	if err := os.WriteFile(config, []byte(values), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	kc := s.cluster.Kubeconfig
	var port int
	proc, err := s.childOnFreePort(ctx, "metrics-adapter", func(p int) (string, []string) {
		port = p
		return fmt.Sprintf("https://127.0.0.1:%d/healthz", p), []string{
			"metrics-adapter",
			fmt.Sprintf("--secure-port=%d", p), "--bind-address=127.0.0.1", "--cert-dir=" + filepath.Join(s.dir, "adapter-certs"),
			"--lister-kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--prometheus-url=" + s.prom.URL, "--config=" + config,
			"--metrics-relist-interval=" + s.opts.MetricsRelistInterval.String(),
		}
	})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(s.cluster.Config)
	if err != nil {
		return err
	}
	if err := registerAdapter(ctx, s.cluster.Client, dyn, port); err != nil {
		return err
	}
	// Served through the aggregator: the APIService is available.
	path := "/apis/custom.metrics.k8s.io/v1beta1"
	var last error
	err = s.poll(ctx, startTimeout, func(ctx context.Context) (bool, error) {
		if exited(proc) {
			return false, fmt.Errorf("metrics-adapter exited (%v)", proc.ExitError())
		}
		_, last = s.cluster.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("demo: %s through the aggregator: %w (last: %v); adapter log %s", path, err, last, proc.LogFile)
	}
	s.p.note("metrics adapter on 127.0.0.1:%d (pid %d), registered as APIService v1beta1.custom.metrics.k8s.io", port, proc.Pid())
	return nil
}

func (s *stack) startAutoscaler(ctx context.Context, _ string) error {
	minSize, extra := 1, []string(nil)
	if s.inference() {
		// No GPU node but what the buffer and the replicas need; buffers on.
		minSize, extra = 0, []string{"--capacity-buffer-controller-enabled=true", "--capacity-buffer-pod-injection-enabled=true"}
	}
	s.p.heading("Starting the node autoscaler (kwok GPU group %s, min %d, max %d; new nodes appear after %s and advertise their GPU %s later)",
		gpuGroup, minSize, s.opts.MaxGPUNodes, s.opts.ProvisioningDelay, s.opts.DevicePluginDelay)
	config := filepath.Join(s.dir, "kwok-gpu.yaml")
	if err := os.WriteFile(config, []byte(renderKwokConfig(s.opts.ProvisioningDelay, s.opts.DevicePluginDelay, minSize, s.opts.MaxGPUNodes)), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	args := append([]string{"cluster-autoscaler", "--kubeconfig=" + s.cluster.Kubeconfig,
		"--cloud-provider=kwok", "--cloud-config=" + config, "--namespace=kube-system",
		"--leader-elect=false", "--address=127.0.0.1:0",
		"--scan-interval=" + s.opts.ScanInterval.String(),
		"--scale-down-unneeded-time=" + s.opts.UnneededTime.String(),
		"--scale-down-delay-after-add=" + s.opts.DelayAfterAdd.String()}, extra...)
	proc, err := s.child(ctx, "cluster-autoscaler", "", args...)
	if err != nil {
		return err
	}
	// Its status ConfigMap says the first loop ran.
	err = s.poll(ctx, startTimeout, func(ctx context.Context) (bool, error) {
		if exited(proc) {
			return false, fmt.Errorf("cluster-autoscaler exited (%v)", proc.ExitError())
		}
		_, err := s.cluster.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("demo: cluster-autoscaler: no status ConfigMap kube-system/cluster-autoscaler-status: %w; log %s", err, proc.LogFile)
	}
	s.p.note("node autoscaler running (pid %d): scan every %s, a node unneeded for %s is removed", proc.Pid(), s.opts.ScanInterval, s.opts.UnneededTime)
	return nil
}

// childOnFreePort starts a child listening on a free loopback port: cmd
// gives its ready URL and arguments for a port. The port may be taken
// between the probe and the child's listen, so a child that exits before
// it is ready is tried again on another port, three times at most.
func (s *stack) childOnFreePort(ctx context.Context, name string, cmd func(port int) (readyURL string, args []string)) (*localcluster.Process, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		port, perr := localcluster.FreePort()
		if perr != nil {
			return nil, perr
		}
		readyURL, args := cmd(port)
		var proc *localcluster.Process
		proc, err = s.child(ctx, name, readyURL, args...)
		if err == nil || proc == nil || !exited(proc) {
			return proc, err
		}
		s.procs = s.procs[:len(s.procs)-1] // it has exited: nothing to stop
	}
	return nil, err
}

// child starts `gpuscale args...` and, when readyURL is set, waits until
// it answers; on that error the process is returned too.
func (s *stack) child(ctx context.Context, name, readyURL string, args ...string) (*localcluster.Process, error) {
	proc, err := localcluster.StartProcess(localcluster.ProcessOptions{
		Name: name, Path: s.opts.Binary, Args: args, LogDir: filepath.Join(s.dir, "logs"),
	})
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, proc)
	if readyURL != "" {
		wctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		if err := proc.WaitHTTP(wctx, readyURL); err != nil {
			return proc, fmt.Errorf("demo: %w", err)
		}
	}
	return proc, nil
}

func exited(p *localcluster.Process) bool {
	select {
	case <-p.Exited():
		return true
	default:
		return false
	}
}

func (s *stack) poll(ctx context.Context, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, cond)
}

// logTails is the end of every child's log, for a failed walkthrough.
func (s *stack) logTails() string {
	var b strings.Builder
	for _, p := range s.procs {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.Name, p.LogFile, p.LogTail(15))
	}
	if s.prom != nil {
		fmt.Fprintf(&b, "--- prometheus (%s)\n%s\n", s.prom.LogFile, s.prom.LogTail(10))
	}
	return b.String()
}

// stop ends the children, Prometheus and the cluster, in that order.
func (s *stack) stop() error {
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		if err := s.procs[i].Stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.procs[i].Name, err))
		}
	}
	if s.prom != nil {
		if err := s.prom.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("prometheus: %w", err))
		}
	}
	if s.cluster != nil {
		if err := s.cluster.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
