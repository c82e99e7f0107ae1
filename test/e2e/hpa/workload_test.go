package hpa

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/dcgmsim"
)

// walkthroughObjects returns the walkthrough's Deployment and HPA (testdata,
// as written) renamed to name in namespace ns.
func walkthroughObjects(t testing.TB, ns, name string) (*appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	var dep appsv1.Deployment
	readYAML(t, "testdata/deployment.yaml", &dep)
	var hpa autoscalingv2.HorizontalPodAutoscaler
	readYAML(t, "testdata/hpa.yaml", &hpa)
	if name != dep.Name {
		dep.Name = name
		dep.Spec.Selector.MatchLabels = map[string]string{"app": name}
		dep.Spec.Template.Labels = map[string]string{"app": name}
		hpa.Name, hpa.Spec.ScaleTargetRef.Name = name, name
	}
	dep.Namespace, hpa.Namespace = ns, ns
	return &dep, &hpa
}

func createDeployment(ctx context.Context, t testing.TB, e *env, dep *appsv1.Deployment) {
	t.Helper()
	if _, err := e.c.Client.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createHPA(ctx context.Context, t testing.TB, e *env, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	if _, err := e.c.Client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readYAML(t testing.TB, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// runningPods waits until exactly n pods of app run (none terminating) and
// returns their names, sorted.
func runningPods(ctx context.Context, t testing.TB, e *env, ns, app string, n int, timeout time.Duration) []string {
	t.Helper()
	var names []string
	var seen []string
	phases := map[string]int{}
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		pods, err := e.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		names, seen = nil, nil
		clear(phases)
		for _, p := range pods.Items {
			phase := string(p.Status.Phase)
			if p.DeletionTimestamp != nil {
				phase = "Terminating"
			} else if p.Status.Phase == corev1.PodRunning {
				names = append(names, p.Name)
			}
			phases[phase]++
			if len(seen) < 10 {
				seen = append(seen, fmt.Sprintf("%s:%s@%q", p.Name, phase, p.Spec.NodeName))
			}
		}
		return len(names) == n && len(pods.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("want %d running %s pods in %s: %v; pods by phase %v, first ones %v", n, app, ns, err, phases, seen)
	}
	sort.Strings(names)
	return names
}

// setLoad annotates a pod with its simulated GPU utilization, as a user
// would with kubectl annotate --overwrite.
func setLoad(ctx context.Context, t testing.TB, e *env, ns, pod string, util int) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, dcgmsim.AnnotationUtil, fmt.Sprint(util))
	if _, err := e.c.Client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hpaState is what `kubectl get hpa` shows: the current average of the Pods
// metric (nil before the first successful read) and the replica counts.
type hpaState struct {
	Average          *resource.Quantity
	Current, Desired int32
}

func (s hpaState) String() string {
	avg := "<unknown>"
	if s.Average != nil {
		avg = s.Average.String()
	}
	return fmt.Sprintf("%s/30 current=%d desired=%d", avg, s.Current, s.Desired)
}

func getHPA(ctx context.Context, e *env, ns, name string) (hpaState, *autoscalingv2.HorizontalPodAutoscaler, error) {
	h, err := e.c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return hpaState{}, nil, err
	}
	s := hpaState{Current: h.Status.CurrentReplicas, Desired: h.Status.DesiredReplicas}
	for _, m := range h.Status.CurrentMetrics {
		if m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil && m.Pods.Current.AverageValue != nil {
			s.Average = m.Pods.Current.AverageValue
		}
	}
	return s, h, nil
}

// waitHPA polls the HPA until cond holds and returns the states it passed
// through (each distinct state once, in order).
func waitHPA(ctx context.Context, t testing.TB, e *env, ns, name string, timeout time.Duration, what string, cond func(hpaState) bool) []hpaState {
	t.Helper()
	var seen []hpaState
	var last *autoscalingv2.HorizontalPodAutoscaler
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		s, h, err := getHPA(ctx, e, ns, name)
		if err != nil {
			return false, err
		}
		last = h
		if len(seen) == 0 || seen[len(seen)-1].String() != s.String() {
			seen = append(seen, s)
		}
		return cond(s), nil
	})
	if err != nil {
		var conds []string
		if last != nil {
			for _, c := range last.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
			}
		}
		t.Fatalf("HPA %s/%s: waiting for %s: %v; states seen %v; conditions: %s", ns, name, what, err, seen, strings.Join(conds, "; "))
	}
	return seen
}

func averageIs(s hpaState, v int64) bool {
	return s.Average != nil && s.Average.Cmp(*resource.NewQuantity(v, resource.DecimalSI)) == 0
}

// checkSeedShape asserts body is the walkthrough's expected output of
// kubectl get --raw .../pods/*/gpu_utilization: the same fields, nothing
// more, one item per pod in pods with the given value.
func checkSeedShape(t testing.TB, body []byte, ns string, pods []string, value string) {
	t.Helper()
	var list map[string]any
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("MetricValueList: "+format+"\n%s", append(args, body)...)
	}
	if got := keysOf(list); !reflect.DeepEqual(got, []string{"apiVersion", "items", "kind", "metadata"}) {
		fail("top-level fields %v, want apiVersion, items, kind, metadata", got)
	}
	if list["kind"] != "MetricValueList" || list["apiVersion"] != "custom.metrics.k8s.io/v1beta1" {
		fail("kind %v apiVersion %v", list["kind"], list["apiVersion"])
	}
	if md, ok := list["metadata"].(map[string]any); !ok || len(md) != 0 {
		fail("metadata %v, want {}", list["metadata"])
	}
	items, _ := list["items"].([]any)
	if len(items) != len(pods) {
		fail("%d items, want %d (%v)", len(items), len(pods), pods)
	}
	var names []string
	for _, it := range items {
		item, _ := it.(map[string]any)
		if got := keysOf(item); !reflect.DeepEqual(got, []string{"describedObject", "metricName", "selector", "timestamp", "value"}) {
			fail("item fields %v, want describedObject, metricName, selector, timestamp, value", got)
		}
		obj, _ := item["describedObject"].(map[string]any)
		if got := keysOf(obj); !reflect.DeepEqual(got, []string{"apiVersion", "kind", "name", "namespace"}) ||
			obj["kind"] != "Pod" || obj["namespace"] != ns || obj["apiVersion"] != "/v1" {
			fail("describedObject %v, want kind Pod, namespace %s, apiVersion /v1", obj, ns)
		}
		names = append(names, fmt.Sprint(obj["name"]))
		if item["metricName"] != "gpu_utilization" || item["value"] != value || item["selector"] != nil {
			fail("metricName %v value %v selector %v, want gpu_utilization, %q, null", item["metricName"], item["value"], item["selector"])
		}
		ts, err := time.Parse(time.RFC3339, fmt.Sprint(item["timestamp"]))
		if err != nil || ts.After(time.Now().Add(time.Second)) || time.Since(ts) > time.Minute {
			fail("timestamp %v: want a recent RFC 3339 time (the sample's own)", item["timestamp"])
		}
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, pods) {
		fail("pods %v, want %v", names, pods)
	}
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
