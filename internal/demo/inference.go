package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/inferencesim"
)

// The inference story's objects.
const (
	inferenceApp   = "llama"
	inferenceModel = "llama-3-8b"
	bufferName     = "llama-warm"
	// inferenceRequests is the load the story sends, more than the 3
	// replicas' 12 slots (4 each): ceil(20 / 4) = 5, held at the HPA's
	// maximum of 3. The queue left while only some replicas run keeps the
	// HPA at 3 (with 10 requests, 2 replicas running 8 and 2 waiting
	// would ask for 2, and the third replica's node would race the HPA's
	// downscale window).
	inferenceRequests = 20
	inferenceReplicas = 3
	// inferenceNodes is the GPU nodes the story needs at most: the
	// replicas and the buffer's warm node.
	inferenceNodes = inferenceReplicas + 1
)

// The inference story's steps, in order.
const (
	// StepWarmCapacity: a CapacityBuffer of one replica's shape made the
	// autoscaler add a GPU node that nothing runs on.
	StepWarmCapacity Step = "warm-capacity"
	// StepAtZero: the model's Deployment, deployed at 1 replica with no
	// requests, was scaled to 0 by its HPA, which reads the requests (none)
	// at the router; the warm node is the one GPU node left.
	StepAtZero Step = "at-zero"
	// StepFromZero: requests arrived; the HPA went 0 -> 3 and the first
	// replica runs on the warm node.
	StepFromZero Step = "from-zero"
	// StepServing: the 3 replicas run, on nodes added for them, and hold.
	StepServing Step = "serving"
	// StepToZero: the requests stopped and the HPA went back to 0.
	StepToZero Step = "to-zero"
	// StepNodesRemoved: the replicas' GPU nodes were removed; the buffer
	// keeps one warm.
	StepNodesRemoved Step = "nodes-removed"
	// StepBufferDeleted: without the buffer the last GPU node went too.
	StepBufferDeleted Step = "buffer-deleted"
)

// InferenceSteps returns the inference story's steps in order.
func InferenceSteps() []Step {
	return []Step{StepWarmCapacity, StepAtZero, StepFromZero, StepServing, StepToZero, StepNodesRemoved, StepBufferDeleted}
}

func appOf(s Story) string {
	if s == StoryInference {
		return inferenceApp
	}
	return appName
}

// startInferenceSim starts the stand-in inference server (its metrics and
// its load control on two loopback ports) and Prometheus scraping it.
func (s *stack) startInferenceSim(ctx context.Context, binDir string) error {
	s.p.heading("Starting inference-sim (vLLM's request metrics for the pods labelled %s, load set per model)", inferencesim.DefaultModelLabel)
	var addr string
	proc, err := s.childOnFreePort(ctx, "inference-sim", func(port int) (string, []string) {
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		control, perr := localcluster.FreePort()
		if perr != nil {
			control = port + 1
		}
		s.loadURL = fmt.Sprintf("http://127.0.0.1:%d", control)
		return "http://" + addr + "/metrics", []string{"inference-sim", "--kubeconfig=" + s.cluster.Kubeconfig,
			"--listen-address=" + addr, fmt.Sprintf("--control-address=127.0.0.1:%d", control), "--slots-per-pod=4"}
	})
	if err != nil {
		return err
	}
	s.p.note("inference-sim serving http://%s/metrics, load at %s/load/%s/%s (pid %d)", addr, s.loadURL, namespace, inferenceModel, proc.Pid())

	s.p.heading("Starting Prometheus (scraping inference-sim every %s, honoring its namespace, pod and model_name labels)", s.opts.ScrapeInterval)
	if err := s.startPrometheus(ctx, binDir, localcluster.ScrapeJob{Name: "inference-sim", Targets: []string{addr}, HonorLabels: true}); err != nil {
		return err
	}
	s.p.note("Prometheus at %s", s.prom.URL)
	return nil
}

// inferenceWalk plays the inference story.
type inferenceWalk struct {
	walk
	loadURL string
	// warmNode is the node the buffer had added; loadAt when the requests
	// arrived.
	warmNode string
	loadAt   time.Time
}

func (k *inferenceWalk) run(ctx context.Context) error {
	return k.steps(ctx, []walkStep{
		{StepWarmCapacity, "Creating CapacityBuffer " + bufferName + " (1 replica of the model's shape): the autoscaler adds a warm GPU node that nothing runs on", k.buffer},
		{StepAtZero, "Deploying " + inferenceApp + " at 1 replica, its HPA on the model's queue (External vllm_requests_waiting and vllm_requests_running, 4 a replica, min 0): with no requests the HPA scales it to 0", k.atZero},
		{StepFromZero, fmt.Sprintf("%d requests arrive and wait at the router: the HPA scales 0 -> %d (its maximum), the first replica starts on the warm node at once", inferenceRequests, inferenceReplicas), k.fromZero},
		{StepServing, "The other replicas wait for GPU nodes the autoscaler adds; served, the requests run and hold the replicas", k.serving},
		{StepToZero, "The requests stop: the HPA returns to 0 after its stabilization window", k.toZero},
		{StepNodesRemoved, "The replicas' GPU nodes are idle: the autoscaler removes them and keeps the buffer's warm node", k.nodesRemoved},
		{StepBufferDeleted, "Deleting the CapacityBuffer: the warm node is unneeded and goes too", k.deleteBuffer},
	})
}

func (k *inferenceWalk) buffers() (dynamic.ResourceInterface, error) {
	dyn, err := dynamic.NewForConfig(k.cluster.Config)
	if err != nil {
		return nil, err
	}
	return dyn.Resource(cb.GroupVersionResource()).Namespace(namespace), nil
}

func (k *inferenceWalk) buffer(ctx context.Context) error {
	tmpl := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: bufferName, Namespace: namespace}, Template: inferencePod()}
	if _, err := k.cluster.Client.CoreV1().PodTemplates(namespace).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return err
	}
	one := int32(1)
	u, err := cb.ToUnstructured(&cb.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: bufferName, Namespace: namespace},
		Spec: cb.Spec{PodTemplateRef: &cb.LocalObjectRef{Name: bufferName}, Replicas: &one}})
	if err != nil {
		return err
	}
	res, err := k.buffers()
	if err != nil {
		return err
	}
	if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CapacityBuffer %s: %w", bufferName, err)
	}
	return k.until(ctx, "one GPU node advertising its GPU", func(ctx context.Context) (bool, string, error) {
		nodes, err := k.gpuNodes(ctx)
		if err != nil {
			return false, "", err
		}
		if len(nodes) == 1 {
			q := nodes[0].Status.Allocatable[gpu.ResourceName]
			if !q.IsZero() {
				k.warmNode = nodes[0].Name
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d GPU nodes", len(nodes)), nil
	})
}

func (k *inferenceWalk) atZero(ctx context.Context) error {
	// A load of 0 makes the router's queue a series: the HPA reads 0, not
	// a missing metric.
	if err := k.setRequests(ctx, 0); err != nil {
		return err
	}
	d, h := inferenceObjects()
	if _, err := k.cluster.Client.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := k.cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Create(ctx, h, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The HPA scales the idle replica to 0 itself: from Kubernetes 1.37 it
	// scales up from 0 only a target it put there (its ScaledToZero
	// condition), reading the queue at the router. The replica
	// ran on the warm node, so the autoscaler added another for the
	// buffer; one of the two is removed once the replica is gone.
	err := k.until(ctx, "the HPA to scale the idle replica to 0 and read the queue", func(ctx context.Context) (bool, string, error) {
		h, err := k.cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, inferenceApp, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pods, err := k.appPods(ctx)
		if err != nil {
			return false, "", err
		}
		t := hpaTargets(h)
		zero := slices.ContainsFunc(h.Status.Conditions, func(c autoscalingv2.HorizontalPodAutoscalerCondition) bool {
			return c.Type == hpa.ScaledToZero && c.Status == v1.ConditionTrue
		})
		return zero && len(pods) == 0 && !strings.HasPrefix(t, "<unknown>") && h.Status.DesiredReplicas == 0,
			fmt.Sprintf("%s; %s", t, podSummary(pods)), nil
	})
	if err != nil {
		return err
	}
	if err := k.untilGPUNodes(ctx, 1); err != nil {
		return err
	}
	nodes, err := k.gpuNodes(ctx)
	if err != nil {
		return err
	}
	k.warmNode = nodes[0].Name
	return nil
}

func (k *inferenceWalk) fromZero(ctx context.Context) error {
	if err := k.setRequests(ctx, inferenceRequests); err != nil {
		return err
	}
	k.loadAt = time.Now()
	return k.until(ctx, fmt.Sprintf("%d replicas and one running on the warm node %s", inferenceReplicas, k.warmNode), func(ctx context.Context) (bool, string, error) {
		pods, err := k.appPods(ctx)
		if err != nil {
			return false, "", err
		}
		d, err := k.cluster.Client.AppsV1().Deployments(namespace).Get(ctx, inferenceApp, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		onWarm := slices.ContainsFunc(runningOf(pods), func(p v1.Pod) bool { return p.Spec.NodeName == k.warmNode })
		if onWarm && *d.Spec.Replicas == inferenceReplicas {
			k.p.note("the first replica serves on warm node %s %s after the requests arrived", k.warmNode, time.Since(k.loadAt).Round(time.Second))
			return true, "", nil
		}
		return false, fmt.Sprintf("replicas %d; %s", *d.Spec.Replicas, podSummary(pods)), nil
	})
}

func (k *inferenceWalk) serving(ctx context.Context) error {
	return k.until(ctx, fmt.Sprintf("%d replicas running on %d GPU nodes", inferenceReplicas, inferenceReplicas), func(ctx context.Context) (bool, string, error) {
		pods, err := k.appPods(ctx)
		if err != nil {
			return false, "", err
		}
		running := runningOf(pods)
		nodes := map[string]bool{}
		for _, p := range running {
			nodes[p.Spec.NodeName] = true
		}
		if len(running) == inferenceReplicas && len(nodes) == inferenceReplicas {
			k.p.note("all %d replicas serve %s after the requests arrived", inferenceReplicas, time.Since(k.loadAt).Round(time.Second))
			return true, "", nil
		}
		return false, podSummary(pods), nil
	})
}

func (k *inferenceWalk) toZero(ctx context.Context) error {
	if err := k.setRequests(ctx, 0); err != nil {
		return err
	}
	return k.until(ctx, "0 replicas", func(ctx context.Context) (bool, string, error) {
		pods, err := k.appPods(ctx)
		if err != nil {
			return false, "", err
		}
		d, err := k.cluster.Client.AppsV1().Deployments(namespace).Get(ctx, inferenceApp, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return len(pods) == 0 && *d.Spec.Replicas == 0, fmt.Sprintf("replicas %d; %s", *d.Spec.Replicas, podSummary(pods)), nil
	})
}

func (k *inferenceWalk) nodesRemoved(ctx context.Context) error {
	return k.untilGPUNodes(ctx, 1)
}

func (k *inferenceWalk) deleteBuffer(ctx context.Context) error {
	res, err := k.buffers()
	if err != nil {
		return err
	}
	if err := res.Delete(ctx, bufferName, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting CapacityBuffer %s: %w", bufferName, err)
	}
	return k.untilGPUNodes(ctx, 0)
}

func (k *inferenceWalk) untilGPUNodes(ctx context.Context, n int) error {
	return k.until(ctx, fmt.Sprintf("%d GPU nodes", n), func(ctx context.Context) (bool, string, error) {
		nodes, err := k.gpuNodes(ctx)
		if err != nil {
			return false, "", err
		}
		return len(nodes) == n, fmt.Sprintf("%d GPU nodes", len(nodes)), nil
	})
}

// setRequests sets the model's requests in inference-sim, as a client's
// traffic would.
func (k *inferenceWalk) setRequests(ctx context.Context, n int) error {
	url := fmt.Sprintf("%s/load/%s/%s", k.loadURL, namespace, inferenceModel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader([]byte(fmt.Sprintf(`{"requests": %d}`, n))))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("setting the load of model %s: %w", inferenceModel, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("setting the load of model %s: %s: %s", inferenceModel, resp.Status, body)
	}
	k.p.note("model %s: %d requests in the system (PUT %s)", inferenceModel, n, url)
	return nil
}

// appPods lists the model's pods that are not terminating.
func (k *inferenceWalk) appPods(ctx context.Context) ([]v1.Pod, error) {
	return livePods(ctx, k.cluster, inferenceApp)
}

// inferencePod is one replica of the model: one GPU.
func inferencePod() v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": inferenceApp, inferencesim.DefaultModelLabel: inferenceModel}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.11.0", Args: []string{"--model", "meta-llama/Llama-3.1-8B-Instruct"},
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{gpu.ResourceName: resource.MustParse("1")}}}},
			Tolerations: []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
		},
	}
}

// inferenceObjects are the model's Deployment, at 1 replica, and its
// HPA: minReplicas 0, 4 requests waiting and 4 running a replica, on the
// External metrics of examples/metrics-adapter/vllm-values.yaml.
func inferenceObjects() (*appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler) {
	zero, one := int32(0), int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: inferenceApp, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": inferenceApp}},
			Template: inferencePod()}}
	four := resource.MustParse("4")
	ext := func(metric string) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: metric, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"model_name": inferenceModel}}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &four}}}
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: inferenceApp, Namespace: namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: inferenceApp},
			MinReplicas:    &zero, MaxReplicas: inferenceReplicas,
			Metrics: []autoscalingv2.MetricSpec{ext("vllm_requests_waiting"), ext("vllm_requests_running")},
		}}
	return d, h
}

// summarizeInference prints what happened in the inference story.
func summarizeInference(p *printer, r *Result) {
	p.heading("Done in %s", r.Duration.Round(time.Second))
	warm := first(r.Nodes.Seen)
	var added string
	if len(r.Nodes.Seen) > 1 {
		added = strings.Join(r.Nodes.Seen[1:], ", ")
	}
	p.block(strings.Join([]string{
		fmt.Sprintf("HPA replicas:       %s", joinInts(r.HPAReplicas)),
		fmt.Sprintf("GPU nodes added:    %s warm for the buffer, %s for the replicas (most at once: %d)", warm, added, r.Nodes.Max),
		fmt.Sprintf("GPU nodes removed:  %s", strings.Join(r.Nodes.Removed, ", ")),
	}, "\n"))
}
