package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	explainpkg "github.com/gpuscale/gpuscale/pkg/explain"
	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// One cluster, every kind of answer: a pod that triggered a scale-up and
// why its group won, a pod too big for every group, nodes kept by a
// PodDisruptionBudget and by a pod without a controller, a node the
// autoscaler removed, the cluster and a node group, the upstream
// cluster_autoscaler_* series as a real Prometheus scrapes them, an HPA whose metrics
// cannot be read, the model's arithmetic on the HPA's real pods, and the
// errors for what is missing or wrongly asked.
func TestExplain(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	cpuNode(t, c.Client, "cpu-pdb")
	cpuNode(t, c.Client, "cpu-bare")
	cpuNode(t, c.Client, "cpu-empty")
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pinnedReplicaSet(t, c.Client, "guarded", "cpu-pdb")
	barePod(t, c.Client, "orphan", "cpu-bare", "100m")
	eventually(t, 30*time.Second, "the PodDisruptionBudget to allow no disruption", func() bool {
		p, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0
	})
	prom := scrapeAutoscaler(t, startAutoscaler(t, c))
	gpuDeployment(t, c.Client, "gpu-web", 1)
	barePod(t, c.Client, "too-big", "", "64")

	t.Run("pod that triggered a scale-up", func(t *testing.T) {
		var pod string
		eventually(t, 60*time.Second, "a TriggeredScaleUp event", func() bool {
			l, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=TriggeredScaleUp"})
			if err != nil || len(l.Items) == 0 {
				return false
			}
			pod = l.Items[0].InvolvedObject.Name
			return true
		})
		out := explain(t, c, "pod/"+pod, "-n", "default")
		mustContain(t, out, "pod default/"+pod+":", "triggered a scale-up", "{gpu 0->1 (max: 2)}",
			"scale-up of node group gpu from 0 to 1 for 1 pod(s)", "the expanders weighed 2 option(s)",
			"    gpu: 1 node(s) for 1 pod(s): chosen\n",
			"    gpu-big: 1 node(s) for 1 pod(s): dropped by least-waste: waste 2.859, the best had waste 1.875\n")

		// -o json is the structured answer: each option's verdict as data.
		var ans struct {
			Kind string `json:"kind"`
			Pod  struct {
				ScaleUps []struct {
					Group   string `json:"group"`
					Options []struct {
						Group     string `json:"group"`
						Chosen    bool   `json:"chosen"`
						DroppedBy string `json:"droppedBy"`
					} `json:"options"`
				} `json:"scaleUps"`
			} `json:"pod"`
		}
		if err := json.Unmarshal([]byte(explain(t, c, "pod", pod, "-n", "default", "-o", "json")), &ans); err != nil {
			t.Fatal(err)
		}
		if ans.Kind != "pod" || len(ans.Pod.ScaleUps) != 1 || ans.Pod.ScaleUps[0].Group != "gpu" {
			t.Fatalf("answer %+v", ans)
		}
		chosen, dropped := "", ""
		for _, o := range ans.Pod.ScaleUps[0].Options {
			if o.Chosen {
				chosen = o.Group
			}
			if o.DroppedBy == "least-waste" {
				dropped = o.Group
			}
		}
		if chosen != "gpu" || dropped != "gpu-big" {
			t.Errorf("chosen %q, dropped %q; want gpu over gpu-big", chosen, dropped)
		}
	})
	t.Run("pod too big for every group", func(t *testing.T) {
		// The earlier NAMESPACE/NAME form still works.
		out := explainUntil(t, c, []string{"did not trigger a scale-up"}, "pod", "default/too-big")
		mustContain(t, out, "node group cpu: ", "node group gpu: ", "node group gpu-big: ", "kube-scheduler: 0/")
	})
	t.Run("node removed by the autoscaler", func(t *testing.T) {
		out := explainUntil(t, c, []string{"was removed by the autoscaler"}, "node", "cpu-empty")
		mustContain(t, out, "it was empty (no pod had to move)", "node group: cpu", "removal began ", "removal done ",
			"Scale-down: removing empty node cpu-empty")
	})
	t.Run("node group", func(t *testing.T) {
		out := explainUntil(t, c, []string{"removal ", "cpu-empty: it was empty"}, "ng/cpu")
		mustContain(t, out, "nodegroup cpu: target ", "(min 0, max 4)", "nodes: ", "scale-up: NoActivity")
		out = explainUntil(t, c, []string{"scaled up "}, "nodegroup", "gpu")
		mustContain(t, out, "nodegroup gpu: target 1 (min 0, max 2)", "Scale-up: setting group gpu size to 1 instead of 0")
	})
	t.Run("metrics scraped by Prometheus", func(t *testing.T) {
		// After the scale-up and the removal above, dashboards and alerts
		// written for upstream find their series.
		checkUpstreamMetrics(t, prom)
	})
	t.Run("cluster", func(t *testing.T) {
		out := explainUntil(t, c, []string{"cluster: healthy, autoscaling"}, "cluster")
		mustContain(t, out, "health: Healthy since ", "nodes: ", "registered (", "scale-down: ",
			"pending pods no scale-up helps: 1 in 1 group(s)", "nodes kept, by reason: ")
		var ans struct {
			Kind    string `json:"kind"`
			Cluster struct {
				Health struct {
					SafeToAutoscale bool `json:"safeToAutoscale"`
				} `json:"health"`
				PendingPods int `json:"pendingPods"`
			} `json:"cluster"`
		}
		if err := yaml.Unmarshal([]byte(explain(t, c, "cluster", "-o", "yaml")), &ans); err != nil {
			t.Fatal(err)
		}
		if ans.Kind != "cluster" || !ans.Cluster.Health.SafeToAutoscale || ans.Cluster.PendingPods != 1 {
			t.Errorf("answer %+v", ans)
		}
	})
	t.Run("node kept by a PodDisruptionBudget", func(t *testing.T) {
		out := explainUntil(t, c, []string{"cannot be moved (NotEnoughPdb)"}, "node", "cpu-pdb")
		mustContain(t, out, "blocking pod: default/guarded-", "rule: NotEnoughPdb", "PodDisruptionBudget default/guarded allows no more disruptions")
	})
	t.Run("node kept by a pod without a controller", func(t *testing.T) {
		out := explainUntil(t, c, []string{"cannot be moved (NotReplicated)"}, "node", "cpu-bare")
		mustContain(t, out, "blocking pod: default/orphan", "has no controller to recreate it")
	})
	t.Run("hpa", func(t *testing.T) {
		target := int32(50)
		minR := int32(1)
		h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "gpu-web", Namespace: "default"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "gpu-web"},
				MinReplicas:    &minR, MaxReplicas: 2,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}}}}
		if _, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, h, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No metrics API runs here: the controller and the model must agree
		// that the CPU metric cannot be read.
		out := explainUntil(t, c, []string{"not scaling: FailedGetResourceMetric"}, "hpa", "gpu-web", "-n", "default")
		mustContain(t, out, "metric resource cpu: current unknown, target 50% of request\n    from metrics.k8s.io\n",
			"condition ScalingActive=False (FailedGetResourceMetric)",
			"cannot be computed: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API",
			"no replica count could be computed")

		// With CPU usage served, the model works on the real pods and scale.
		eventually(t, 60*time.Second, "the gpu-web pod to run", func() bool {
			l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=gpu-web"})
			return err == nil && len(l.Items) == 1 && l.Items[0].Status.Phase == v1.PodRunning
		})
		o := explainpkg.DefaultOptions()
		o.Client, o.AutoscalerNamespace, o.Metrics = c.Client, ns, cpuAt{c.Client, 900}
		e, err := explainpkg.New(o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.HPA(ctx, explainpkg.Target{Kind: explainpkg.KindHPA, Namespace: "default", Name: "gpu-web"})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("with 900m CPU served:\n%s", r)
		// 900m of a 500m request is 180%, ratio 3.6: 4 replicas, 2 at most.
		mustContain(t, r.String(), "180% of request on average over 1 pod(s) with samples, target 50%: ratio 3.600",
			"metric cpu resource utilization (percentage of request) proposes 4 replicas",
			"limited to 2: the desired replica count is more than the maximum replica count (TooManyReplicas)",
			"result: scale from 1 to 2")
	})
	t.Run("missing objects and wrong forms", func(t *testing.T) {
		mustContain(t, explainErr(t, c, "pod", "default/nope"), "pod default/nope not found")
		mustContain(t, explainErr(t, c, "node", "nope"), "node nope not found, and no event of the autoscaler names it")
		mustContain(t, explainErr(t, c, "hpa/nope", "-n", "default"), "HorizontalPodAutoscaler default/nope not found")
		mustContain(t, explainErr(t, c, "node", "cpu-pdb", "--autoscaler-namespace", "elsewhere"),
			"status ConfigMap elsewhere/cluster-autoscaler-status not found")
		// -n in its earlier meaning, the autoscaler's namespace.
		mustContain(t, explainErr(t, c, "node", "cpu-pdb", "-n", ns), `-n/--namespace "kube-system": nodes have no namespace`, "--autoscaler-namespace")
		mustContain(t, explainErr(t, c, "pod", "too-big", "-n", ns), "pod kube-system/too-big not found",
			"-n/--namespace now names the pod's own namespace")
		mustContain(t, explainErr(t, c, "default/too-big"), `"default" is not a pod, node`, "explain pod/too-big -n default")
		mustContain(t, explainErr(t, c, "pod", "x", "-o", "xml"), `-o/--output: "xml" is not a format`)
	})
}

// cpuAt serves every selected pod the same CPU usage, in millicores.
type cpuAt struct {
	client kubernetes.Interface
	milli  int64
}

func (u cpuAt) Resource(ctx context.Context, namespace string, sel labels.Selector, res v1.ResourceName, _ string) (map[string]hpa.PodMetric, error) {
	if res != v1.ResourceCPU {
		return nil, errors.New("only cpu is served")
	}
	l, err := u.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	out := map[string]hpa.PodMetric{}
	for _, p := range l.Items {
		out[p.Name] = hpa.PodMetric{Value: u.milli, Timestamp: time.Now()}
	}
	return out, nil
}
func (cpuAt) Pods(context.Context, string, labels.Selector, string, labels.Selector) (map[string]hpa.PodMetric, error) {
	return nil, errors.New("not served")
}
func (cpuAt) Object(context.Context, string, autoscalingv2.CrossVersionObjectReference, string, labels.Selector) (int64, error) {
	return 0, errors.New("not served")
}
func (cpuAt) External(context.Context, string, string, labels.Selector) (int64, error) {
	return 0, errors.New("not served")
}

// explain runs `gpuscale explain` as a user would.
func explain(t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	out, err := run(c, args...)
	if err != nil {
		t.Fatalf("gpuscale explain %v: %v\n%s", args, err, out)
	}
	t.Logf("gpuscale explain %v:\n%s", args, out)
	return out
}

// explainUntil runs explain until its output holds every want (the
// autoscaler needs a loop or two to write what explain reads).
func explainUntil(t *testing.T, c *cluster.Cluster, want []string, args ...string) string {
	t.Helper()
	var out string
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		out, err = run(c, args...)
		if err == nil && containsAll(out, want) {
			t.Logf("gpuscale explain %v:\n%s", args, out)
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("gpuscale explain %v never said %q; last answer (err %v):\n%s", args, want, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// explainErr runs explain and returns its error, failing if there is none.
func explainErr(t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	out, err := run(c, args...)
	if err == nil {
		t.Fatalf("gpuscale explain %v: no error; output:\n%s", args, out)
	}
	return err.Error()
}

// run runs the gpuscale binary's explain command, in a process of its own
// as a user runs it beside the autoscaler (each gpuscale command makes its
// logger the process's); an error carries what the command printed.
func run(c *cluster.Cluster, args ...string) (string, error) {
	bin, err := gpuscaleBinary()
	if err != nil {
		return "", err
	}
	// Flags given by the caller come last, so they win.
	cmd := exec.Command(bin, append([]string{"explain", "--kubeconfig", c.Kubeconfig, "--autoscaler-namespace", ns}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// gpuscaleBinary builds the gpuscale command once for the package's tests.
var gpuscaleBinary = sync.OnceValues(func() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "gpuscale-explain-e2e-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gpuscale")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gpuscale")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gpuscale: %v\n%s", err, out)
	}
	return bin, nil
})

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("missing %q in:\n%s", p, s)
		}
	}
}
