// Package cluster starts real, local Kubernetes control planes for
// end-to-end tests: a thin testing wrapper over internal/localcluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
// kwok controller as processes, all bound to 127.0.0.1).
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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/internal/localcluster"
)

// KubeVersion is the Kubernetes version of the control plane (hack/tools/go.mod).
const KubeVersion = localcluster.KubeVersion

// coldBuildBudget is how much test time a cold hack/build-tools.sh needs
// (about ten minutes on two busy cores) plus the test itself.
const coldBuildBudget = 20 * time.Minute

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

// Cluster is a running local control plane: the fields of
// localcluster.Cluster (Name, Kubeconfig, Config, Client, BinDir, Dir).
type Cluster struct {
	*localcluster.Cluster
	stopOnce sync.Once
}

// Workdir is where the test clusters live, shared by every test process so
// that clusters left by killed ones are found and deleted.
func Workdir() string { return filepath.Join(os.TempDir(), "gpuscale-e2e") }

// toolsResult is the outcome of one ensureTools, kept for the process.
type toolsResult struct{ binDir, skip string }

var (
	toolsMu   sync.Mutex
	toolsDone = map[string]toolsResult{}
)

// Tools builds (or reuses) the named tools (hack/build-tools.sh names; all
// of them, Prometheus included, when none are named) and returns their
// directory. It skips the test when SKIP_E2E=1 or with -short, and when the
// tools are not built yet and the test deadline leaves no room to build
// them.
func Tools(t testing.TB, names ...string) string {
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
	if len(names) == 0 {
		names = localcluster.AllTools()
	}
	key := strings.Join(names, " ")
	toolsMu.Lock()
	r, ok := toolsDone[key]
	if !ok {
		var err error
		r.binDir, r.skip, err = ensureTools(names, deadline, hasDeadline)
		if err != nil {
			toolsMu.Unlock()
			t.Fatalf("e2e cluster: %v", err)
		}
		toolsDone[key] = r
	}
	toolsMu.Unlock()
	if r.skip != "" {
		t.Skip(r.skip)
	}
	return r.binDir
}

func ensureTools(names []string, deadline time.Time, hasDeadline bool) (binDir, skip string, err error) {
	ctx := context.Background()
	binDir, built, err := localcluster.CheckTools(ctx, names...)
	if err != nil || built {
		return binDir, "", err
	}
	if hasDeadline && time.Until(deadline) < coldBuildBudget {
		return "", "control-plane binaries are not built yet and a cold build takes about 10 minutes, " +
			"more than this test's -timeout leaves: run `make tools` (hack/build-tools.sh) once, " +
			"or go test -timeout 30m; skipping", nil
	}
	binDir, err = localcluster.EnsureTools(ctx, os.Stderr, names...)
	return binDir, "", err
}

// Start builds (or reuses) the tools and starts a fresh cluster with a unique
// name under a temporary directory, waits until the API server is ready and
// the default ServiceAccount exists, and registers t.Cleanup to delete it.
// It skips the test as Tools does.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	binDir := Tools(t, localcluster.ClusterTools()...)
	name := opts.Name
	if name == "" {
		name = t.Name()
	}
	start := time.Now()
	lc, err := localcluster.Start(context.Background(), localcluster.Options{
		BinDir:                binDir,
		Workdir:               Workdir(),
		Name:                  name,
		ControllerManagerArgs: opts.ControllerManagerArgs,
		SchedulerArgs:         opts.SchedulerArgs,
		APIServerArgs:         opts.APIServerArgs,
		Logf:                  t.Logf,
	})
	if err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	c := &Cluster{Cluster: lc}
	t.Cleanup(func() { c.Stop(t) })
	t.Logf("e2e cluster %s ready in %v (KUBECONFIG=%s)", c.Name, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return c
}

// Kubectl runs the cluster's kubectl against it and returns its combined output.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.Cluster.Kubectl(ctx, args...)
}

// Stop deletes the cluster: its processes and its files, logging the
// component logs first when the test failed. Start registers it with
// t.Cleanup; calling it again does nothing.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.stopOnce.Do(func() {
		if t.Failed() {
			t.Logf("e2e cluster %s component logs:\n%s", c.Name, c.LogTails(25))
		}
		if err := c.Cluster.Stop(); err != nil {
			t.Errorf("e2e cluster %s: %v", c.Name, err)
		}
	})
}

// ScaleDeployment sets the replicas of Deployment namespace/name through its
// scale subresource, as kubectl scale and the HPA do.
func (c *Cluster) ScaleDeployment(t testing.TB, namespace, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	deployments := c.Client.AppsV1().Deployments(namespace)
	// The Deployment controller writes the object's status meanwhile:
	// read the scale again and retry when the write loses that race.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = deployments.UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scale %s/%s to %d: %v", namespace, name, replicas, err)
	}
}
