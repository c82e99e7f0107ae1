package faults_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// restartControlPlane stops the cluster's processes (kube-apiserver, etcd,
// the controllers and the kwok controller) and starts them again on the
// same data, as kwokctl does, then waits for the API server to serve.
// It returns how long the API server was away.
func (s *scope) restartControlPlane(down time.Duration) time.Duration {
	s.t.Helper()
	kwokctl := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(s.c.BinDir, "kwokctl"), append([]string{"--name", s.c.Name}, args...)...)
		cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+cluster.Workdir())
		cmd.WaitDelay = 5 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			s.t.Fatalf("kwokctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	start := time.Now()
	kwokctl("stop", "cluster")
	time.Sleep(down)
	kwokctl("start", "cluster")
	eventually(s.t, 2*time.Minute, "the API server to serve again", func() bool {
		_, err := s.c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil
	})
	return time.Since(start)
}

// Fault: kube-apiserver restarts in the middle of a loop (the whole control
// plane stops and starts on the same data, while a scale-up is under way).
// The autoscaler logs the lost connection, its loops fail while the API
// server is away, and it recovers by itself: the pods run, on one node
// each, and it scales again afterwards.
func TestAPIServerRestartedMidLoop(t *testing.T) {
	s := newScope(t, "apiserver")
	cfg := s.kwokConfig(5*time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	target := func() int { return s.instances("cpu") }
	o := s.options("a")
	s.start(o, startOptions{Config: cfg})
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"})
	eventually(t, 30*time.Second, "the scale-up to be asked for", func() bool { return s.pendingEntries() == 1 })
	away := s.restartControlPlane(3 * time.Second)
	t.Logf("the API server was away for %s", away.Round(100*time.Millisecond))
	most := peak(target)
	eventually(t, 90*time.Second, "web to run after the restart", func() bool { return s.running("web") == 1 })
	s.c.ScaleDeployment(t, s.ns, "web", 2)
	eventually(t, 60*time.Second, "a second node for the second pod", func() bool { return s.running("web") == 2 })
	if p := most(); p != 2 {
		t.Errorf("the group's target peaked at %d, want 2: one node per pod", p)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "cannot list or watch the API server") && !strings.Contains(logs, "autoscaling loop failed") {
		t.Errorf("the lost API server was not logged:\n%s", logs)
	}
}
