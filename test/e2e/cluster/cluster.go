// Package cluster starts real, local Kubernetes control planes for
// end-to-end tests: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and the kwok controller run as processes (kwokctl
// --runtime binary, no containers), all bound to 127.0.0.1.
//
// The binaries come from hack/build-tools.sh (pinned in hack/tools, built from
// the Go module proxy into .cache/tools/<key>/bin; the first build takes
// about ten minutes on two cores, later runs reuse it). The kwok controller
// manages every Node: Nodes become and stay Ready, and pods bound to them
// become Running, without a kubelet.
//
// Set SKIP_E2E=1 (or run go test -short) to skip these tests.
package cluster

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
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
)

const (
	modulePath = "github.com/gpuscale/gpuscale"
	// KubeVersion is the Kubernetes version of the control plane (hack/tools/go.mod).
	KubeVersion = "v1.35.4"

	// coldBuildBudget is how much test time a cold hack/build-tools.sh needs
	// (about ten minutes on two busy cores) plus the test itself.
	coldBuildBudget = 20 * time.Minute
	createTimeout   = 3 * time.Minute
	readyTimeout    = 2 * time.Minute
)

// tools are the binaries a cluster needs (prometheus is not one of them).
var tools = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"}

// Options configure Start.
type Options struct {
	// Name prefixes the cluster name (default: the test name). The name is
	// always made unique with the process id and a random suffix.
	Name string
	// ControllerManagerArgs, SchedulerArgs and APIServerArgs are extra flags,
	// "--flag=value" (or "flag=value"), appended after kwokctl's own, so they
	// win over them. kube-controller-manager already runs with
	// --horizontal-pod-autoscaler-sync-period=5s.
	ControllerManagerArgs []string
	SchedulerArgs         []string
	APIServerArgs         []string
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
}

var (
	toolsOnce   sync.Once
	toolsBinDir string
	toolsSkip   string
	toolsErr    error
)

// Start builds (or reuses) the tools and starts a fresh cluster with a unique
// name under a temporary directory, waits until the API server is ready and
// the default ServiceAccount exists, and registers t.Cleanup to delete it.
// It skips the test when SKIP_E2E=1 or with -short, and when the tools are not
// built yet and the test deadline leaves no room to build them.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if os.Getenv("SKIP_E2E") == "1" {
		t.Skip("SKIP_E2E=1: skipping an end-to-end test that starts a local control plane")
	}
	if testing.Short() {
		t.Skip("-short: skipping an end-to-end test that starts a local control plane")
	}

	deadline, hasDeadline := time.Time{}, false
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		deadline, hasDeadline = d.Deadline()
	}
	toolsOnce.Do(func() { toolsBinDir, toolsSkip, toolsErr = ensureTools(deadline, hasDeadline) })
	if toolsErr != nil {
		t.Fatalf("e2e cluster: %v", toolsErr)
	}
	if toolsSkip != "" {
		t.Skip(toolsSkip)
	}

	workdir := filepath.Join(os.TempDir(), "gpuscale-e2e")
	if err := os.MkdirAll(filepath.Join(workdir, "configs"), 0o755); err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	name := clusterName(opts.Name, t.Name())
	c := &Cluster{
		Name:       name,
		BinDir:     toolsBinDir,
		workdir:    workdir,
		Dir:        filepath.Join(workdir, "clusters", name),
		Kubeconfig: filepath.Join(workdir, "clusters", name, "kubeconfig.yaml"),
	}

	// kwokctl picks free ports by probing: clusters created at the same time
	// by parallel test processes could pick the same ones. Create them one at
	// a time, holding the lock until every component listens.
	unlock, err := lockFile(filepath.Join(workdir, "create.lock"))
	if err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	defer unlock()
	c.deleteStale(t)

	t.Cleanup(func() { c.stop(t) })
	start := time.Now()
	if err := c.create(opts); err != nil {
		t.Fatalf("e2e cluster %s: %v\n%s", name, err, c.logTails())
	}
	if err := c.connect(); err != nil {
		t.Fatalf("e2e cluster %s: %v", name, err)
	}
	if err := c.waitReady(); err != nil {
		t.Fatalf("e2e cluster %s: %v\n%s", name, err, c.logTails())
	}
	t.Logf("e2e cluster %s ready in %v (KUBECONFIG=%s)", name, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return c
}

// Kubectl runs the cluster's kubectl against it and returns its combined output.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Stop deletes the cluster: its processes and its files. Start registers it
// with t.Cleanup; calling it again does nothing.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.stop(t)
}

func (c *Cluster) stop(t testing.TB) {
	c.stopOnce.Do(func() {
		if t.Failed() {
			t.Logf("e2e cluster %s component logs:\n%s", c.Name, c.logTails())
		}
		if err := c.delete(c.Name); err != nil {
			t.Errorf("e2e cluster %s: %v", c.Name, err)
		}
		_ = os.Remove(c.configPath())
	})
}

// delete deletes cluster name of c's workdir with kwokctl and, should that
// fail, kills the processes its pid files name, so none outlives the test.
func (c *Cluster) delete(name string) error {
	dir := filepath.Join(c.workdir, "clusters", name)
	// kwokctl delete cluster rejects an empty --kubeconfig (kwokctl create
	// accepts one); removing the context from the cluster's own kubeconfig,
	// deleted next, is harmless.
	out, err := c.kwokctl(time.Minute, "delete", "cluster", "--name", name, "--kubeconfig", filepath.Join(dir, "kubeconfig.yaml"))
	if err != nil {
		err = fmt.Errorf("kwokctl delete cluster: %w\n%s", err, out)
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

func (c *Cluster) create(opts Options) error {
	bin := func(name string) string { return filepath.Join(c.BinDir, name) }
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
	kcm := append([]string{"--horizontal-pod-autoscaler-sync-period=5s"}, opts.ControllerManagerArgs...)
	for _, p := range []struct {
		component string
		args      []string
	}{
		{"kube-controller-manager", kcm},
		{"kube-scheduler", opts.SchedulerArgs},
		{"kube-apiserver", opts.APIServerArgs},
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
				return fmt.Errorf("bad %s flag %q", p.component, a)
			}
			patch.ExtraArgs = append(patch.ExtraArgs, extraArg{Key: k, Value: v})
		}
		conf.ComponentsPatches = append(conf.ComponentsPatches, patch)
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.configPath(), data, 0o644); err != nil {
		return err
	}
	out, err := c.kwokctl(createTimeout, "--name", c.Name, "-c", c.configPath(), "create", "cluster", "--kubeconfig", "")
	if err != nil {
		return fmt.Errorf("kwokctl create cluster: %w\n%s", err, out)
	}
	return nil
}

func (c *Cluster) kwokctl(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.workdir)
	// kwokctl starts the components as background processes that outlive it;
	// do not wait for their inherited output pipes.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// connect builds Config and Client from the kubeconfig kwokctl wrote. It
// decodes the file itself rather than with clientcmd, which needs
// github.com/spf13/pflag.
func (c *Cluster) connect() error {
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	obj, _, err := clientcmdlatest.Codec.Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("decode %s: %w", c.Kubeconfig, err)
	}
	kc, ok := obj.(*clientcmdapi.Config)
	if !ok {
		return fmt.Errorf("decode %s: got %T", c.Kubeconfig, obj)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil {
		return fmt.Errorf("%s: no current context", c.Kubeconfig)
	}
	cl, ai := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl == nil || ai == nil {
		return fmt.Errorf("%s: context %q lacks its cluster or user", c.Kubeconfig, kc.CurrentContext)
	}
	base := filepath.Dir(c.Kubeconfig)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	c.Config = &rest.Config{
		Host: cl.Server,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: cl.InsecureSkipTLSVerify,
			CAFile:   abs(cl.CertificateAuthority),
			CAData:   cl.CertificateAuthorityData,
			CertFile: abs(ai.ClientCertificate),
			CertData: ai.ClientCertificateData,
			KeyFile:  abs(ai.ClientKey),
			KeyData:  ai.ClientKeyData,
		},
		BearerToken: ai.Token,
		Username:    ai.Username,
		Password:    ai.Password,
		QPS:         100,
		Burst:       200,
		UserAgent:   "gpuscale-e2e",
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	return err
}

// waitReady waits for /readyz and for the default ServiceAccount, which the
// controller manager's serviceaccount controller creates.
func (c *Cluster) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = fmt.Errorf("/readyz: %w: %s", err, body)
			return false, nil
		}
		_, err = c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				last = err
			} else {
				last = errors.New("default ServiceAccount not created yet")
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("not ready after %v: %v", readyTimeout, last)
	}
	return nil
}

// logTails returns the last lines of every component log, for failures.
func (c *Cluster) logTails() string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

var ownedName = regexp.MustCompile(`-p(\d+)-[0-9a-f]{6}$`)

// clusterName is unique across processes and calls: <prefix>-p<pid>-<random>.
func clusterName(prefix, testName string) string {
	if prefix == "" {
		prefix = testName
	}
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
		p = "e2e"
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("%s-p%d-%s", p, os.Getpid(), hex.EncodeToString(rnd[:]))
}

// deleteStale deletes clusters left behind by test processes that died
// without cleaning up (a test timeout, a kill): their components keep
// running otherwise. Called with the create lock held.
func (c *Cluster) deleteStale(t testing.TB) {
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
		t.Logf("e2e cluster: deleting %s, left behind by dead process %d", name, pid)
		if err := c.delete(name); err != nil {
			t.Logf("e2e cluster: delete %s: %v", name, err)
		}
		_ = os.Remove(filepath.Join(c.workdir, "configs", name+".json"))
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
