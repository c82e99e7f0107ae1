package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/internal/demo"
	"github.com/gpuscale/gpuscale/internal/localcluster"
	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// TestDemoInferenceQuick runs `gpuscale demo --story inference --quick`
// and checks each step against the cluster: the buffer's warm node, the
// model at 0, 0 -> 3 with the first replica on the warm node, 3 serving
// on 3 nodes, back to 0, the replicas' nodes removed, then the warm one.
func TestDemoInferenceQuick(t *testing.T) {
	binDir := cluster.Tools(t, localcluster.AllTools()...)
	binary := buildGPUScale(t)

	opts := demo.Quick()
	opts.Story = demo.StoryInference
	opts.Binary, opts.BinDir, opts.Workdir = binary, binDir, cluster.Workdir()
	var out bytes.Buffer
	opts.Out = &out
	var stepsSeen []demo.Step
	var warm string
	opts.AfterStep = func(step demo.Step, c *localcluster.Cluster) error {
		stepsSeen = append(stepsSeen, step)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := inferenceState(ctx, c)
		if err != nil {
			return err
		}
		t.Logf("after %s: %s", step, s)
		switch step {
		case demo.StepWarmCapacity:
			want(t, step, "GPU nodes", len(s.nodes), 1)
			want(t, step, "pods on them", s.podsOnGPUNodes, 0)
			want(t, step, "buffer replicas", s.bufferReplicas, int32(1))
			if len(s.nodes) == 1 {
				warm = s.nodes[0]
			}
		case demo.StepAtZero:
			want(t, step, "deployment replicas", s.replicas, int32(0))
			// The queue is read at 0 replicas (the running series of the
			// replica that went may be read too, at 0).
			want(t, step, "HPA reads the queue", s.hpaMetrics >= 1, true)
			// The idle replica ran on the warm node and went: one GPU node
			// is left, warm for the buffer (which of the two, scale-down chose).
			want(t, step, "GPU nodes", len(s.nodes), 1)
			if len(s.nodes) == 1 {
				warm = s.nodes[0]
			}
		case demo.StepFromZero:
			want(t, step, "deployment replicas", s.replicas, int32(3))
			want(t, step, "a replica running on the warm node", slices.Contains(s.runningOn, warm), true)
		case demo.StepServing:
			want(t, step, "running replicas", len(s.runningOn), 3)
			want(t, step, "HPA desired replicas", s.hpaDesired, int32(3))
			want(t, step, "the warm node kept", slices.Contains(s.nodes, warm), true)
		case demo.StepToZero:
			want(t, step, "deployment replicas", s.replicas, int32(0))
			want(t, step, "pods", s.pods, 0)
		case demo.StepNodesRemoved:
			want(t, step, "GPU nodes (the buffer's)", len(s.nodes), 1)
		case demo.StepBufferDeleted:
			want(t, step, "GPU nodes", len(s.nodes), 0)
		}
		if t.Failed() {
			return fmt.Errorf("cluster state after %s is not the story's", step)
		}
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	res, err := demo.Run(ctx, opts)
	if err != nil || t.Failed() {
		t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("demo output:\n%s", out.String())
	if !slices.Equal(stepsSeen, demo.InferenceSteps()) {
		t.Errorf("steps %v, want %v", stepsSeen, demo.InferenceSteps())
	}
	// 1, scaled to 0 by the HPA, up to 3, and back to 0 (through whatever
	// the window's recommendations give on the way down).
	r := res.HPAReplicas
	if len(r) < 4 || r[0] != 1 || r[1] != 0 || slices.Max(r) != 3 || r[len(r)-1] != 0 {
		t.Errorf("HPA replicas went %v, want 1, 0, up to 3, back to 0", r)
	}
	seen, removed := slices.Clone(res.Nodes.Seen), slices.Clone(res.Nodes.Removed)
	slices.Sort(seen)
	slices.Sort(removed)
	if len(seen) < 3 || !slices.Contains(seen, warm) || !slices.Equal(seen, removed) {
		t.Errorf("GPU nodes seen %v, removed %v: want the warm node %s, one for each other replica, all removed", res.Nodes.Seen, res.Nodes.Removed, warm)
	}
	for _, line := range []string{"Step 7/7:", "step from-zero done in", "the first replica serves on warm node " + warm} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}

type inferenceClusterState struct {
	replicas, hpaDesired int32
	pods, hpaMetrics     int
	runningOn, nodes     []string
	podsOnGPUNodes       int
	bufferReplicas       int32
}

func (s inferenceClusterState) String() string {
	return fmt.Sprintf("replicas %d (HPA desired %d, %d metrics read); pods %d running on %v; GPU nodes %v (%d pods on them); buffer replicas %d",
		s.replicas, s.hpaDesired, s.hpaMetrics, s.pods, s.runningOn, s.nodes, s.podsOnGPUNodes, s.bufferReplicas)
}

func inferenceState(ctx context.Context, c *localcluster.Cluster) (inferenceClusterState, error) {
	var s inferenceClusterState
	client := kubernetes.Interface(c.Client)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.LabelNodeGroup + "=" + gpuGroup})
	if err != nil {
		return s, err
	}
	gpuNode := map[string]bool{}
	for _, n := range nodes.Items {
		s.nodes = append(s.nodes, n.Name)
		gpuNode[n.Name] = true
	}
	all, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	for _, p := range all.Items {
		if gpuNode[p.Spec.NodeName] && p.DeletionTimestamp == nil {
			s.podsOnGPUNodes++
		}
		if p.Namespace != ns || p.Labels["app"] != "llama" || p.DeletionTimestamp != nil {
			continue
		}
		s.pods++
		if p.Status.Phase == "Running" {
			s.runningOn = append(s.runningOn, p.Spec.NodeName)
		}
	}
	if d, err := client.AppsV1().Deployments(ns).Get(ctx, "llama", metav1.GetOptions{}); err == nil {
		s.replicas = *d.Spec.Replicas
	}
	if h, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "llama", metav1.GetOptions{}); err == nil {
		s.hpaDesired = h.Status.DesiredReplicas
		for _, m := range h.Status.CurrentMetrics {
			if m.Type != "" {
				s.hpaMetrics++
			}
		}
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return s, err
	}
	if u, err := dyn.Resource(cb.GroupVersionResource()).Namespace(ns).Get(ctx, "llama-warm", metav1.GetOptions{}); err == nil {
		if b, err := cb.FromUnstructured(u); err == nil && b.Status.Replicas != nil {
			s.bufferReplicas = *b.Status.Replicas
		}
	}
	return s, nil
}
