package demo

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/examples"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/inferencesim"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter/config"
)

func TestSeedObjectsAreTheGuides(t *testing.T) {
	d, err := seedDeployment()
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 || d.Namespace != namespace || d.Spec.Template.Labels["app"] != appName {
		t.Errorf("Deployment %s/%s replicas %d labels %v", d.Namespace, d.Name, *d.Spec.Replicas, d.Spec.Template.Labels)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if q := c.Resources.Limits[gpu.ResourceName]; q.Value() != 1 {
		t.Errorf("GPU limit %s, want 1", q.String())
	}
	if tol := d.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "nvidia.com/gpu" || tol[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("tolerations %+v, want the nvidia.com/gpu NoSchedule one", tol)
	}

	h, err := seedHPA()
	if err != nil {
		t.Fatal(err)
	}
	m := h.Spec.Metrics[0]
	if *h.Spec.MinReplicas != 1 || h.Spec.MaxReplicas != 2 || m.Type != autoscalingv2.PodsMetricSourceType ||
		m.Pods.Metric.Name != metricName || m.Pods.Target.AverageValue.Value() != 30 {
		t.Errorf("HPA spec %+v", h.Spec)
	}
}

func TestKwokConfigIsValidWithTheRequestedBounds(t *testing.T) {
	cfg, err := kwok.ParseConfig([]byte(renderKwokConfig(2*time.Second, 7*time.Second, 1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.NodeGroups[0]
	if cfg.ProvisioningDelay != 2*time.Second || cfg.DevicePluginDelay != 7*time.Second {
		t.Errorf("delays %s, %s", cfg.ProvisioningDelay, cfg.DevicePluginDelay)
	}
	if g.Name != gpuGroup || g.MinSize != 1 || g.MaxSize != 3 {
		t.Errorf("group %s min %d max %d, want %s 1..3", g.Name, g.MinSize, g.MaxSize, gpuGroup)
	}
	if q := g.Template.Capacity[gpu.ResourceName]; q.Value() != 1 {
		t.Errorf("GPUs per node %s, want 1", q.String())
	}
}

func TestAdapterValuesKeepTheGuidesRule(t *testing.T) {
	text := examples.GPUUtilizationAdapterValues
	var values struct {
		Prometheus struct {
			URL  string `json:"url"`
			Port int    `json:"port"`
		} `json:"prometheus"`
		Rules struct {
			Custom []map[string]any `json:"custom"`
		} `json:"rules"`
	}
	if err := yaml.UnmarshalStrict([]byte(text), &values); err != nil {
		t.Fatal(err)
	}
	if values.Prometheus.URL == "" || values.Prometheus.Port == 0 {
		t.Errorf("prometheus %+v, want the guide's address (the demo overrides it with --prometheus-url)", values.Prometheus)
	}
	r := values.Rules.Custom
	if len(r) != 1 || r[0]["metricsQuery"] != "avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)" {
		t.Errorf("rules %v", r)
	}
	if _, err := config.Parse([]byte(text)); err != nil {
		t.Errorf("the metrics adapter refuses the values: %v", err)
	}
}

func TestHPARowAsKubectlShowsIt(t *testing.T) {
	created := time.Date(2026, 5, 7, 21, 0, 0, 0, time.UTC)
	minR := int32(1)
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: appName, CreationTimestamp: metav1.NewTime(created)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: appName},
			MinReplicas:    &minR, MaxReplicas: 2,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: metricName},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(30, resource.DecimalSI)},
			}}},
		},
	}
	row := hpaRow(h, created.Add(14*time.Minute))
	if got := strings.Join(row, " "); got != "gpu-hpa-test Deployment/gpu-hpa-test <unknown>/30 1 2 0 14m" {
		t.Errorf("row before the first sync = %q", got)
	}
	h.Status.CurrentReplicas = 2
	h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
		Metric:  autoscalingv2.MetricIdentifier{Name: metricName},
		Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewQuantity(100, resource.DecimalSI)},
	}}}
	row = hpaRow(h, created.Add(14*time.Minute))
	table := newHPATable(row)
	header, line := table.header(), table.line(row)
	// The guide's line, with kubectl's column alignment.
	for i, col := range []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"} {
		at := strings.Index(header, col)
		if at < 0 || !strings.HasPrefix(line[at:], row[i]) {
			t.Errorf("column %s: header %q, line %q", col, header, line)
		}
	}
	if strings.Join(strings.Fields(line), " ") != "gpu-hpa-test Deployment/gpu-hpa-test 100/30 1 2 2 14m" {
		t.Errorf("line %q", line)
	}
}

func TestWatcherCountsGPUNodesAndReplicas(t *testing.T) {
	var out strings.Builder
	now := time.Now()
	w := newWatcher(newPrinter(&out, func() time.Time { return now }), func() time.Time { return now }, appName)
	node := func(name, group string, gpus int64) *v1.Node {
		return &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kwok.LabelNodeGroup: group}},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{gpu.ResourceName: *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}
	}
	w.node(nil, node("a", gpuGroup, 1))
	w.node(nil, node("cpu", "cpu", 0)) // another group: not counted
	w.node(nil, node("b", gpuGroup, 0))
	w.node(nil, node("b", gpuGroup, 1)) // its device plugin is ready
	w.deleted(node("b", gpuGroup, 1))
	w.deleted(node("cpu", "cpu", 0))

	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: appName}}
	for _, r := range []int32{0, 1, 1, 2, 2, 1} {
		h := hpa.DeepCopy()
		h.Status.CurrentReplicas = r
		w.hpa(nil, h)
	}

	nodes, replicas := w.record()
	if strings.Join(nodes.Seen, ",") != "a,b" || strings.Join(nodes.Removed, ",") != "b" || nodes.Max != 2 {
		t.Errorf("nodes %+v, want seen a,b removed b max 2", nodes)
	}
	if len(replicas) != 3 || replicas[0] != 1 || replicas[1] != 2 || replicas[2] != 1 {
		t.Errorf("replicas %v, want 1 2 1", replicas)
	}
	for _, want := range []string{"node b added to group gpu-a10g (GPU not advertised yet", "node b advertises 1 nvidia.com/gpu", "node b removed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "node cpu") {
		t.Errorf("a CPU node was reported:\n%s", out.String())
	}
}

func TestOptionsValidateNamesTheOption(t *testing.T) {
	for _, o := range []Options{Defaults(), Quick()} {
		if err := o.Validate(); err != nil {
			t.Errorf("preset refused: %v", err)
		}
	}
	o := Quick()
	o.ScrapeInterval = 0
	o.MaxGPUNodes = 1
	o.Story = "llm"
	err := o.Validate()
	for _, want := range []string{"ScrapeInterval must be positive, got 0s", "MaxGPUNodes must be at least 2",
		`the story (--story) must be "gpu" or "inference", got "llm"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

// The inference story's HPA can take the model to zero and lift it on the
// queue: minReplicas 0, External metrics only, the Deployment at 1 (the
// HPA scales up from 0 only a target it scaled to 0 itself).
func TestInferenceObjectsScaleToZeroOnTheQueue(t *testing.T) {
	d, h := inferenceObjects()
	if *d.Spec.Replicas != 1 || *h.Spec.MinReplicas != 0 || h.Spec.MaxReplicas != inferenceReplicas {
		t.Errorf("Deployment at %d, HPA %d..%d; want 1, 0..%d", *d.Spec.Replicas, *h.Spec.MinReplicas, h.Spec.MaxReplicas, inferenceReplicas)
	}
	for i, m := range h.Spec.Metrics {
		if m.Type != autoscalingv2.ExternalMetricSourceType || m.External.Metric.Selector.MatchLabels["model_name"] != inferenceModel {
			t.Errorf("metric %d: %+v, want External for model %s", i, m, inferenceModel)
		}
	}
	if d.Spec.Template.Labels[inferencesim.DefaultModelLabel] != inferenceModel {
		t.Errorf("pod labels %v lack the model label inference-sim reads", d.Spec.Template.Labels)
	}
	// The HPA must ask for every replica however many of them run yet
	// (inference-sim runs 4 a replica; the rest wait): the larger of the
	// two metrics over 4, held at the maximum.
	for running := 0; running < inferenceReplicas; running++ {
		slots := running * 4
		run, wait := min(inferenceRequests, slots), max(inferenceRequests-slots, 0)
		if want := max((run+3)/4, (wait+3)/4); want < inferenceReplicas {
			t.Errorf("%d requests with %d replicas running: %d running and %d waiting ask for %d replicas, not %d",
				inferenceRequests, running, run, wait, want, inferenceReplicas)
		}
	}
}
