package autoscaler_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// hold is a finalizer that keeps an evicted pod terminating until the test
// lets it go, so the drain is still in progress when the autoscaler dies.
const hold = "gpuscale.dev/e2e-hold"

// The gpuscale binary is killed (SIGKILL) in the middle of a drain: the node
// is tainted and its pod is terminating. A new autoscaler takes the taint
// off at start, and the Deployment still has its pod.
func TestKilledMidDrain(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "gpuscale")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gpuscale/gpuscale/cmd/gpuscale").CombinedOutput(); err != nil {
		t.Fatalf("building gpuscale: %v\n%s", err, out)
	}
	cpuNode(t, c.Client, "draining")
	// The destination keeps a pod that may not move, so only "draining" goes.
	cpuNode(t, c.Client, "destination", v1.Taint{Key: "hold", Value: "x", Effect: v1.TaintEffectNoSchedule})
	barePod(t, c.Client, "anchor", "destination", func(p *v1.Pod) {
		p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
	})
	web := deployment("web", 1, 0, "100m")
	web.Spec.Template.Finalizers = []string{hold}
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the web pod to run on the draining node", func() bool { return runningPods(t, c.Client, "web") == 1 })
	untaint(t, c, "destination", "hold")

	config := filepath.Join(t.TempDir(), "kwok.yaml")
	if err := os.WriteFile(config, []byte("nodeGroups:\n- name: cpu\n  minSize: 0\n  maxSize: 6\n  template:\n    capacity: {cpu: \"4\", memory: 16Gi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "cluster-autoscaler", "--kubeconfig", c.Kubeconfig, "--cloud-provider=kwok",
		"--cloud-config", config, "--leader-elect=false", "--address=127.0.0.1:0", "--scan-interval=1s",
		"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=0s", "--max-graceful-termination-sec=300")
	cmd.Stdout, cmd.Stderr = logSink(), logSink()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	eventually(t, 60*time.Second, "the drain to start (node tainted, pod terminating)", func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "draining", metav1.GetOptions{})
		return err == nil && hasTaint(n, disruption.TaintToBeDeleted) && terminatingPods(t, c, "web") == 1
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	if n, _ := c.Client.CoreV1().Nodes().Get(ctx, "draining", metav1.GetOptions{}); !hasTaint(n, disruption.TaintToBeDeleted) {
		t.Fatal("the killed autoscaler took its taint off: this test no longer kills mid-drain")
	}

	// The new autoscaler only has to clean up; with scale-down off it will
	// not start the same removal again while the test looks.
	restarted := fastOptions()
	restarted.Autoscaler.ScaleDownEnabled = false
	c.StartAutoscaler(t, kwokConfig(t, 0), restarted)
	eventually(t, 30*time.Second, "the restarted autoscaler to remove the stranded taint", func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "draining", metav1.GetOptions{})
		return err != nil || !hasTaint(n, disruption.TaintToBeDeleted)
	})
	release(t, c, "web")
	eventually(t, 60*time.Second, "the Deployment to have its pod running again", func() bool { return runningPods(t, c.Client, "web") == 1 })
}

func hasTaint(n *v1.Node, key string) bool {
	if n == nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func terminatingPods(t *testing.T, c *cluster.Cluster, app string) int {
	l, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

// release drops the hold finalizer from the app's pods.
func release(t *testing.T, c *cluster.Cluster, app string) {
	t.Helper()
	l, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{}}})
	for _, p := range l.Items {
		if _, err := c.Client.CoreV1().Pods("default").Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func untaint(t *testing.T, c *cluster.Cluster, node, key string) {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := n.Spec.Taints[:0]
	for _, tt := range n.Spec.Taints {
		if tt.Key != key {
			kept = append(kept, tt)
		}
	}
	n.Spec.Taints = kept
	if _, err := c.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
