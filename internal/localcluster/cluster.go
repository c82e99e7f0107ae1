// Package localcluster runs a real Kubernetes control plane and a
// Prometheus server on this machine, as processes bound to 127.0.0.1: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
// controller (kwokctl --runtime binary, no containers). The end-to-end tests
// and `gpuscale demo` use it.
//
// The binaries come from hack/build-tools.sh (EnsureTools): pinned in
// hack/tools and built from the Go module proxy into .cache/tools/<key>/bin;
// the first build takes about ten minutes on two cores, later runs reuse it.
// The kwok controller manages every Node: Nodes become and stay Ready, and
// pods bound to them become Running, without a kubelet.
package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeVersion is the Kubernetes version of the control plane (hack/tools/go.mod).
const KubeVersion = "v1.37.2"

// Default timeouts of Start.
const (
	DefaultCreateTimeout = 3 * time.Minute
	DefaultReadyTimeout  = 2 * time.Minute
)

// Options configure Start.
type Options struct {
	// BinDir holds the control-plane binaries (EnsureTools returns it). Required.
	BinDir string
	// Workdir holds the clusters (Workdir/clusters/<name>) and a lock
	// shared by every process that creates clusters there (default
	// $TMPDIR/gpuscale-local).
	Workdir string
	// Name prefixes the cluster name (default "local"). The name is made
	// unique with the process id and a random suffix; clusters whose process
	// has died are deleted by the next Start in the same Workdir.
	Name string
	// ControllerManagerArgs, SchedulerArgs and APIServerArgs are extra flags,
	// "--flag=value" (or "flag=value"), appended after kwokctl's own, so they
	// win over them. kube-controller-manager already runs with
	// --horizontal-pod-autoscaler-sync-period=5s, and it and kube-apiserver
	// with --feature-gates=HPAScaleToZero=true (scale to zero, alpha before
	// Kubernetes 1.37); a further --feature-gates adds to it.
	ControllerManagerArgs []string
	SchedulerArgs         []string
	APIServerArgs         []string
	// KwokControllerArgs are extra flags of the kwok controller, for
	// example --manage-all-nodes=false with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake, so
	// that nodes without the annotation keep the status a test gives them.
	KwokControllerArgs []string
	// CreateTimeout bounds kwokctl create cluster, ReadyTimeout the wait for
	// the API server and the default ServiceAccount (defaults above).
	CreateTimeout time.Duration
	ReadyTimeout  time.Duration
	// Logf receives notes such as stale clusters deleted (default: none).
	Logf func(format string, args ...any)
}

// Cluster is a running local control plane.
type Cluster struct {
	// Name is the kwokctl cluster name.
	Name string
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string
	// Config and Client talk to the cluster as admin.
	Config *rest.Config
	Client kubernetes.Interface
	// BinDir holds the control-plane binaries (kubectl, kwokctl...).
	BinDir string
	// Dir is the cluster's kwokctl directory: logs/, pki/, kwok.yaml...
	Dir string

	workdir  string
	stopOnce sync.Once
	stopErr  error
}

// Start creates a fresh cluster under opts.Workdir and waits until its API
// server is ready and the default ServiceAccount exists. On error nothing
// is left running. ctx bounds the start only; Stop ends the cluster.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.BinDir == "" {
		return nil, errors.New("localcluster: Options.BinDir is required (EnsureTools returns it)")
	}
	if opts.Workdir == "" {
		opts.Workdir = filepath.Join(os.TempDir(), "gpuscale-local")
	}
	if opts.CreateTimeout <= 0 {
		opts.CreateTimeout = DefaultCreateTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(filepath.Join(opts.Workdir, "configs"), 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	name := uniqueName(opts.Name)
	c := &Cluster{
		Name:       name,
		BinDir:     opts.BinDir,
		workdir:    opts.Workdir,
		Dir:        filepath.Join(opts.Workdir, "clusters", name),
		Kubeconfig: filepath.Join(opts.Workdir, "clusters", name, "kubeconfig.yaml"),
	}

	// kwokctl picks free ports by probing: clusters created at the same time
	// by parallel processes could pick the same ones. Create them one at a
	// time, holding the lock until every component listens.
	unlock, err := lockFile(filepath.Join(opts.Workdir, "create.lock"))
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	defer unlock()
	c.deleteStale(ctx, opts.Logf)

	fail := func(err error, withLogs bool) (*Cluster, error) {
		err = fmt.Errorf("localcluster: cluster %s: %w", name, err)
		if withLogs {
			err = fmt.Errorf("%w\n%s", err, c.LogTails(25))
		}
		_ = c.Stop()
		return nil, err
	}
	if err := c.create(ctx, opts); err != nil {
		return fail(err, true)
	}
	if c.Config, err = loadKubeconfig(c.Kubeconfig); err != nil {
		return fail(err, false)
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return fail(err, false)
	}
	if err := c.waitReady(ctx, opts.ReadyTimeout); err != nil {
		return fail(err, true)
	}
	if err := c.installCRDs(ctx, opts.ReadyTimeout); err != nil {
		return fail(err, true)
	}
	return c, nil
}

// Kubectl runs the cluster's kubectl against it and returns its combined
// output; the error carries the output too.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Stop deletes the cluster: its processes and its files. Calling it again
// returns the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.delete(context.Background(), c.Name)
		_ = os.Remove(c.configPath())
	})
	return c.stopErr
}

// delete deletes cluster name of c's workdir with kwokctl and, should that
// fail, kills the processes its pid files name, so none outlives it.
func (c *Cluster) delete(ctx context.Context, name string) error {
	dir := filepath.Join(c.workdir, "clusters", name)
	// kwokctl delete cluster rejects an empty --kubeconfig (kwokctl create
	// accepts one); removing the context from the cluster's own kubeconfig,
	// deleted next, is harmless.
	out, err := c.kwokctl(ctx, time.Minute, "delete", "cluster", "--name", name, "--kubeconfig", filepath.Join(dir, "kubeconfig.yaml"))
	if err != nil {
		err = fmt.Errorf("kwokctl delete cluster %s: %w\n%s", name, err, out)
		pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
		for _, f := range pids {
			data, rerr := os.ReadFile(f)
			if rerr != nil {
				continue
			}
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil && pid > 1 {
				if p, ferr := os.FindProcess(pid); ferr == nil {
					_ = p.Kill()
				}
			}
		}
	}
	_ = os.RemoveAll(dir)
	return err
}

func (c *Cluster) configPath() string {
	return filepath.Join(c.workdir, "configs", c.Name+".json")
}

// kwokctlConfig is the subset of kwokctl's KwokctlConfiguration we set
// (config.kwok.x-k8s.io/v1alpha1); JSON is YAML.
type kwokctlConfig struct {
	Kind              string           `json:"kind"`
	APIVersion        string           `json:"apiVersion"`
	Options           map[string]any   `json:"options"`
	ComponentsPatches []componentPatch `json:"componentsPatches,omitempty"`
}

type componentPatch struct {
	Name      string     `json:"name"`
	ExtraArgs []extraArg `json:"extraArgs,omitempty"`
}

type extraArg struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// scaleToZeroGate lets HPAs set minReplicas 0 (with an Object or External
// metric) on Kubernetes before 1.37, where HPAScaleToZero is alpha and off;
// the API server validates it and the controller acts on it, so both get it.
// From 1.37 it is beta and on, and the flag changes nothing.
const scaleToZeroGate = "--feature-gates=HPAScaleToZero=true"

// kwokctlConfiguration renders the cluster's kwokctl configuration.
func kwokctlConfiguration(binDir string, opts Options) ([]byte, error) {
	bin := func(name string) string { return filepath.Join(binDir, name) }
	conf := kwokctlConfig{
		Kind:       "KwokctlConfiguration",
		APIVersion: "config.kwok.x-k8s.io/v1alpha1",
		Options: map[string]any{
			"runtime":     "binary",
			"kubeVersion": KubeVersion,
			// Every component listens on loopback only (kwokctl's default is 0.0.0.0).
			"bindAddress":                 "127.0.0.1",
			"etcdBinary":                  bin("etcd"),
			"kubeApiserverBinary":         bin("kube-apiserver"),
			"kubeControllerManagerBinary": bin("kube-controller-manager"),
			"kubeSchedulerBinary":         bin("kube-scheduler"),
			"kwokControllerBinary":        bin("kwok"),
			"kubectlBinary":               bin("kubectl"),
			"etcdQuotaBackendSize":        "1Gi",
		},
	}
	kcm := append([]string{"--horizontal-pod-autoscaler-sync-period=5s", scaleToZeroGate}, opts.ControllerManagerArgs...)
	apiserver := append([]string{scaleToZeroGate}, opts.APIServerArgs...)
	for _, p := range []struct {
		component string
		args      []string
	}{
		{"kube-controller-manager", kcm},
		{"kube-scheduler", opts.SchedulerArgs},
		{"kube-apiserver", apiserver},
		{"kwok-controller", opts.KwokControllerArgs},
	} {
		if len(p.args) == 0 {
			continue
		}
		patch := componentPatch{Name: p.component}
		for _, a := range p.args {
			k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !ok {
				v = "true"
			}
			if k == "" {
				return nil, fmt.Errorf("bad %s flag %q: want --flag=value", p.component, a)
			}
			patch.ExtraArgs = append(patch.ExtraArgs, extraArg{Key: k, Value: v})
		}
		conf.ComponentsPatches = append(conf.ComponentsPatches, patch)
	}
	return json.MarshalIndent(conf, "", "  ")
}

func (c *Cluster) create(ctx context.Context, opts Options) error {
	data, err := kwokctlConfiguration(c.BinDir, opts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.configPath(), data, 0o644); err != nil {
		return err
	}
	out, err := c.kwokctl(ctx, opts.CreateTimeout, "--name", c.Name, "-c", c.configPath(), "create", "cluster", "--kubeconfig", "")
	if err != nil {
		return fmt.Errorf("kwokctl create cluster: %w\n%s", err, out)
	}
	return nil
}

func (c *Cluster) kwokctl(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.workdir)
	// kwokctl starts the components as background processes that outlive it;
	// do not wait for their inherited output pipes.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitReady waits for /readyz and for the default ServiceAccount, which the
// controller manager's serviceaccount controller creates.
func (c *Cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = fmt.Errorf("/readyz: %w: %s", err, body)
			return false, nil
		}
		_, err = c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			last = errors.New("default ServiceAccount not created yet")
			return false, nil
		case err != nil:
			last = err
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("not ready after %v: %v", timeout, last)
	}
	return nil
}

// LogTails returns the last n lines of every component log, for failures.
func (c *Cluster) LogTails(n int) string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

var ownedName = regexp.MustCompile(`-p(\d+)-[0-9a-f]{6}$`)

// uniqueName is unique across processes and calls: <prefix>-p<pid>-<random>,
// the prefix lower-cased and cut to DNS-label characters.
func uniqueName(prefix string) string {
	var s strings.Builder
	for _, r := range strings.ToLower(prefix) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			s.WriteRune(r)
		default:
			if s.Len() > 0 && !strings.HasSuffix(s.String(), "-") {
				s.WriteByte('-')
			}
		}
	}
	p := strings.Trim(s.String(), "-")
	if len(p) > 24 {
		p = strings.TrimRight(p[:24], "-")
	}
	if p == "" {
		p = "local"
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("%s-p%d-%s", p, os.Getpid(), hex.EncodeToString(rnd[:]))
}

// deleteStale deletes clusters left behind by processes that died without
// cleaning up (a test timeout, a kill): their components keep running
// otherwise. Called with the create lock held.
func (c *Cluster) deleteStale(ctx context.Context, logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(c.workdir, "clusters", "*"))
	for _, dir := range dirs {
		name := filepath.Base(dir)
		m := ownedName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || processAlive(pid) {
			continue
		}
		logf("localcluster: deleting %s, left behind by dead process %d", name, pid)
		if err := c.delete(ctx, name); err != nil {
			logf("localcluster: delete %s: %v", name, err)
		}
		_ = os.Remove(filepath.Join(c.workdir, "configs", name+".json"))
	}
}
