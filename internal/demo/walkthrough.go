package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
)

// walk plays the steps against a started stack.
type walk struct {
	opts    Options
	p       *printer
	w       *watcher
	cluster *localcluster.Cluster
	// stressed is the pod the load is put on.
	stressed string
}

type stepFunc func(ctx context.Context) error

// walkStep is one step: its name, its heading and what it does.
type walkStep struct {
	step  Step
	title string
	fn    stepFunc
}

func (k *walk) run(ctx context.Context) error {
	return k.steps(ctx, []walkStep{
		{StepDeployed, "Deploying gpu-hpa-test (1 replica, 1 nvidia.com/gpu): no GPU node yet, the autoscaler adds the first", k.deploy},
		{StepMetricServed, "kubectl get --raw /apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_utilization", k.metric},
		{StepHPAApplied, "Applying the HPA: average gpu_utilization 30, 1 to 2 replicas", k.applyHPA},
		{StepScaledOut, "Stressing the GPU (pod annotation gpuscale.dev/simulated-gpu-util=100): the HPA wants 2 replicas", k.stress},
		{StepNodeAdded, "The second pod waits for a GPU: the autoscaler adds one GPU node", k.nodeAdded},
		{StepScaledIn, "Stopping the stress (annotation 0): the HPA returns to 1 replica after its stabilization window", k.unstress},
		{StepNodeRemoved, "The extra GPU node is idle: the autoscaler drains and removes it", k.nodeRemoved},
	})
}

// steps plays steps in order, each within the step timeout, and says how
// long each took.
func (k *walk) steps(ctx context.Context, steps []walkStep) error {
	for i, s := range steps {
		k.p.heading("Step %d/%d: %s", i+1, len(steps), s.title)
		t0 := time.Now()
		sctx, cancel := context.WithTimeout(ctx, k.opts.StepTimeout)
		err := s.fn(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("demo: step %s: %w", s.step, err)
		}
		k.p.note("step %s done in %s", s.step, time.Since(t0).Round(100*time.Millisecond))
		if k.opts.AfterStep != nil {
			if err := k.opts.AfterStep(s.step, k.cluster); err != nil {
				return fmt.Errorf("demo: after step %s: %w", s.step, err)
			}
		}
	}
	return nil
}

// until polls cond until it holds; on timeout the error says what was
// awaited and how things last stood.
func (k *walk) until(ctx context.Context, what string, cond func(ctx context.Context) (ok bool, state string, err error)) error {
	var state string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, s, err := cond(ctx)
		state = s
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (last seen: %s)", what, err, state)
	}
	return nil
}

func (k *walk) deploy(ctx context.Context) error {
	d, err := seedDeployment()
	if err != nil {
		return err
	}
	if _, err := k.cluster.Client.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	return k.until(ctx, "the pod to run on a GPU node", func(ctx context.Context) (bool, string, error) {
		pods, err := k.pods(ctx)
		if err != nil {
			return false, "", err
		}
		running := runningOf(pods)
		if len(running) == 1 {
			k.stressed = running[0].Name
		}
		return len(running) == 1, podSummary(pods), nil
	})
}

func (k *walk) metric(ctx context.Context) error {
	path := "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/" + metricName
	var body []byte
	err := k.until(ctx, "the metric of pod "+k.stressed, func(ctx context.Context) (bool, string, error) {
		var err error
		body, err = k.cluster.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		return bytes.Contains(body, []byte(`"name":"`+k.stressed+`"`)), string(body), nil
	})
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "    "); err != nil {
		pretty.Write(body)
	}
	k.p.block(pretty.String())
	return nil
}

func (k *walk) applyHPA(ctx context.Context) error {
	h, err := seedHPA()
	if err != nil {
		return err
	}
	if _, err := k.cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Create(ctx, h, metav1.CreateOptions{}); err != nil {
		return err
	}
	return k.until(ctx, "the HPA to read gpu_utilization", func(ctx context.Context) (bool, string, error) {
		h, err := k.cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, appName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return !strings.HasPrefix(hpaTargets(h), "<unknown>"), hpaTargets(h), nil
	})
}

func (k *walk) stress(ctx context.Context) error {
	if err := k.setLoad(ctx, k.stressed, "100"); err != nil {
		return err
	}
	return k.until(ctx, "2 replicas and a pod pending for want of a GPU", func(ctx context.Context) (bool, string, error) {
		pods, err := k.pods(ctx)
		if err != nil {
			return false, "", err
		}
		pending := 0
		for _, p := range pods {
			if unschedulable(&p) {
				pending++
			}
		}
		return len(pods) == 2 && pending == 1, podSummary(pods), nil
	})
}

func (k *walk) nodeAdded(ctx context.Context) error {
	return k.until(ctx, "2 pods running on 2 GPU nodes and the HPA at 50/30", func(ctx context.Context) (bool, string, error) {
		pods, err := k.pods(ctx)
		if err != nil {
			return false, "", err
		}
		nodes, err := k.gpuNodes(ctx)
		if err != nil {
			return false, "", err
		}
		h, err := k.cluster.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, appName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		running := runningOf(pods)
		state := fmt.Sprintf("%s; %d GPU nodes; TARGETS %s", podSummary(pods), len(nodes), hpaTargets(h))
		return len(running) == 2 && running[0].Spec.NodeName != running[1].Spec.NodeName &&
			len(nodes) == 2 && hpaTargets(h) == "50/30", state, nil
	})
}

func (k *walk) unstress(ctx context.Context) error {
	if err := k.setLoad(ctx, k.stressed, "0"); err != nil {
		return err
	}
	return k.until(ctx, "1 replica", func(ctx context.Context) (bool, string, error) {
		pods, err := k.pods(ctx)
		if err != nil {
			return false, "", err
		}
		d, err := k.cluster.Client.AppsV1().Deployments(namespace).Get(ctx, appName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return len(pods) == 1 && len(runningOf(pods)) == 1 && *d.Spec.Replicas == 1, podSummary(pods), nil
	})
}

func (k *walk) nodeRemoved(ctx context.Context) error {
	return k.until(ctx, "one GPU node left", func(ctx context.Context) (bool, string, error) {
		nodes, err := k.gpuNodes(ctx)
		if err != nil {
			return false, "", err
		}
		return len(nodes) == 1, fmt.Sprintf("%d GPU nodes", len(nodes)), nil
	})
}

// setLoad sets the simulated GPU utilization of a pod, as the guide's
// stress script would drive its GPU.
func (k *walk) setLoad(ctx context.Context, pod, util string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{dcgmsim.AnnotationUtil: util}}})
	if _, err := k.cluster.Client.CoreV1().Pods(namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate pod %s %s=%s: %w", pod, dcgmsim.AnnotationUtil, util, err)
	}
	k.p.note("pod %s annotated %s=%s", pod, dcgmsim.AnnotationUtil, util)
	return nil
}

// pods lists the Deployment's pods that are not terminating.
func (k *walk) pods(ctx context.Context) ([]v1.Pod, error) {
	return livePods(ctx, k.cluster, appName)
}

// livePods lists the demo namespace's pods labelled app=app that are not
// terminating.
func livePods(ctx context.Context, c *localcluster.Cluster, app string) ([]v1.Pod, error) {
	l, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func (k *walk) gpuNodes(ctx context.Context) ([]v1.Node, error) {
	l, err := k.cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.LabelNodeGroup + "=" + gpuGroup})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func runningOf(pods []v1.Pod) []v1.Pod {
	var out []v1.Pod
	for _, p := range pods {
		if p.Status.Phase == v1.PodRunning {
			out = append(out, p)
		}
	}
	return out
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func podSummary(pods []v1.Pod) string {
	if len(pods) == 0 {
		return "no pods"
	}
	parts := make([]string, len(pods))
	for i, p := range pods {
		parts[i] = fmt.Sprintf("%s %s@%q", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	return strings.Join(parts, ", ")
}
