package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// LabelScope is on every template node of a test's groups and in the node
// selector of its pods: a test's pods only ever fit its own nodes.
const LabelScope = "faults.gpuscale.dev/scope"

// scope is one test's share of the cluster: a namespace (its pods, the
// autoscalers' status ConfigMaps, Leases and kwok state) and node groups
// named <code>-<name>.
type scope struct {
	t    *testing.T
	c    *cluster.Cluster
	ns   string
	code string
	logs *syncBuffer
}

// newScope skips when the suite has no cluster, makes the namespace, and
// registers the cleanup: the scope's nodes and namespace are deleted after
// every autoscaler it started has stopped.
func newScope(t *testing.T, code string) *scope {
	t.Helper()
	if shared == nil {
		t.Skip("SKIP_E2E=1 or -short: skipping an end-to-end test that needs a local control plane")
	}
	s := &scope{t: t, c: shared, ns: "faults-" + code, code: code, logs: &syncBuffer{}}
	ctx := context.Background()
	_, err := s.c.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", s.ns, err)
	}
	t.Cleanup(s.cleanup)
	return s
}

func (s *scope) cleanup() {
	ctx := context.Background()
	if s.t.Failed() {
		s.t.Logf("autoscaler logs of %s:\n%s", s.ns, s.logs.String())
	}
	// Pods held by a test's finalizer would keep the namespace forever.
	if pods, err := s.c.Client.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			if len(p.Finalizers) > 0 {
				_, _ = s.c.Client.CoreV1().Pods(s.ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`), metav1.PatchOptions{})
			}
		}
	}
	sel := metav1.ListOptions{LabelSelector: LabelScope + "=" + s.ns}
	if err := s.c.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		s.t.Errorf("deleting the nodes of %s: %v", s.ns, err)
	}
	zero := int64(0)
	if err := s.c.Client.CoreV1().Namespaces().Delete(ctx, s.ns, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		s.t.Errorf("deleting namespace %s: %v", s.ns, err)
	}
}

// group names a group of the scope.
func (s *scope) group(name string) string { return s.code + "-" + name }

// groupSpec is one kwok group of a test.
type groupSpec struct {
	name     string
	min, max int
	cpu      string
	// gpus per node (nvidia.com/gpu), and the price per hour, when set.
	gpus  int
	price float64
	spot  bool
	// options are the group's autoscalingOptions, as YAML flow text.
	options string
}

// kwokConfig builds the kwok configuration of the scope's groups, every
// template node labelled with the scope.
func (s *scope) kwokConfig(provisioningDelay time.Duration, groups ...groupSpec) *kwok.Config {
	s.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "provisioningDelay: %s\nnodeGroups:\n", provisioningDelay)
	for _, g := range groups {
		gpus := ""
		if g.gpus > 0 {
			gpus = fmt.Sprintf(", nvidia.com/gpu: \"%d\"", g.gpus)
		}
		fmt.Fprintf(&b, "- name: %s\n  minSize: %d\n  maxSize: %d\n  pricePerHour: %g\n  spot: %t\n  template:\n    labels: {%s: %s}\n    capacity: {cpu: %q, memory: 16Gi, pods: \"110\"%s}\n",
			s.group(g.name), g.min, g.max, g.price, g.spot, LabelScope, s.ns, g.cpu, gpus)
		if g.options != "" {
			fmt.Fprintf(&b, "  autoscalingOptions: %s\n", g.options)
		}
	}
	cfg, err := kwok.ParseConfig([]byte(b.String()))
	if err != nil {
		s.t.Fatalf("kwok config: %v\n%s", err, b.String())
	}
	return cfg
}

// options are the controller's options for a fast test: one-second loops,
// short waits, logs into the scope's buffer.
func (s *scope) options(replica string) controller.Options {
	o := controller.DefaultOptions()
	o.Namespace = s.ns
	o.ScanInterval = time.Second
	o.Address = ""
	o.LeaderElection.Enabled = false
	o.Autoscaler.ScaleDown.UnneededTime = 3 * time.Second
	o.Autoscaler.ScaleDown.DelayAfterAdd = 0
	o.Autoscaler.ScaleDown.DelayAfterFailure = time.Second
	o.Autoscaler.ScaleDown.MaxDrainParallelism = 0
	o.Autoscaler.ClusterState.Backoff.Initial = 2 * time.Second
	o.Autoscaler.ClusterState.Backoff.Max = 4 * time.Second
	o.Autoscaler.ScaleUp.Expander = "least-waste"
	o.MaxPodEvictionTime = 20 * time.Second
	o.CacheSyncReport = time.Second
	o.Logger = slog.New(slog.NewTextHandler(s.logSink(), &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", replica)
	return o
}

func (s *scope) logSink() io.Writer {
	if os.Getenv("E2E_LOG") == "1" {
		return io.MultiWriter(s.logs, os.Stderr)
	}
	return s.logs
}

// replica is an autoscaler running in the test process.
type replica struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startOptions are what start needs beyond the controller's options.
type startOptions struct {
	Config *kwok.Config
	Faults kwok.Faults
	// Client replaces the cluster's client (to intercept requests).
	Client kubernetes.Interface
}

// start runs a controller with the kwok provider until stop or the end of
// the test: a fresh process, as far as the cluster can tell.
func (s *scope) start(o controller.Options, so startOptions) *replica {
	s.t.Helper()
	client := so.Client
	if client == nil {
		client = s.c.Client
	}
	p, err := kwok.New(kwok.Options{Client: client, Config: so.Config, Namespace: o.Namespace, Logger: o.Logger, Faults: so.Faults})
	if err != nil {
		s.t.Fatal(err)
	}
	ctrl, err := controller.New(client, p, o)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- ctrl.Run(ctx) }()
	s.t.Cleanup(r.stop)
	return r
}

// stop cancels the replica and waits for it to return, as a killed
// process leaves what it was doing (in-process, its goroutines end with
// it instead of the process dying).
func (r *replica) stop() {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(30 * time.Second):
		}
	})
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
