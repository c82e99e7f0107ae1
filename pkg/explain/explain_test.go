package explain

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/status"
)

var now = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func statusMap(t *testing.T, d status.Document) *v1.ConfigMap {
	t.Helper()
	d.Time = now.Add(-5 * time.Second).Format(time.RFC3339)
	text, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-status", Namespace: "kube-system"},
		Data: map[string]string{status.Key: text}}
}

func explainer(t *testing.T, metrics MetricsSource, objs ...runtime.Object) *Explainer {
	t.Helper()
	return explainerWith(t, fake.NewClientset(objs...), metrics)
}

func explainerWith(t *testing.T, client *fake.Clientset, metrics MetricsSource) *Explainer {
	t.Helper()
	o := DefaultOptions()
	o.Client = client
	o.Clock = clocktesting.NewFakePassiveClock(now)
	o.Metrics = metrics
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func unschedulable(p *v1.Pod) *v1.Pod {
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}
	return p
}

func podEvent(pod, reason, msg string, at time.Time) *v1.Event {
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + "." + reason, Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "default"},
		Reason:         reason, Message: msg, LastTimestamp: metav1.NewTime(at)}
}

func mustContain(t *testing.T, r Report, parts ...string) {
	t.Helper()
	text := r.String()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("report lacks %q:\n%s", p, text)
		}
	}
}

func TestPod(t *testing.T) {
	pending := status.Document{PendingPods: []status.PendingEntry{{Pods: []string{"default/big", "default/big-2"}, Count: 2,
		Reasons: []status.GroupReason{
			{Group: "cpu", Reason: "NotFitTemplate", Predicate: "NodeResourcesFit", Message: "the pod does not fit a new node: Insufficient nvidia.com/gpu"},
			{Group: "gpu", Reason: "PartialScaleUp", Message: "chosen for other pods; 0 of 1 equivalent pods fit its new nodes"}}}}}
	cases := []struct {
		name string
		objs []runtime.Object
		arg  string
		want []string
	}{
		{name: "pending pod listed in the status gets a reason per group", arg: "default/big",
			objs: []runtime.Object{unschedulable(builder.Pod("big").Namespace("default").Build()), statusMap(t, pending)},
			want: []string{"pod default/big: did not trigger a scale-up", "node group cpu: the pod does not fit a new node: Insufficient nvidia.com/gpu",
				"\n  node group gpu: chosen for other pods; 0 of 1 equivalent pods fit its new nodes\n", "the same holds for 1 equivalent pod(s): default/big-2",
				"kube-scheduler: 0/1 nodes are available", "(status written at 2026-03-01T09:59:55Z (5s ago))"}},
		{name: "pod with a TriggeredScaleUp event waits for its node", arg: "default/web",
			objs: []runtime.Object{unschedulable(builder.Pod("web").Namespace("default").Build()), statusMap(t, status.Document{}),
				podEvent("web", ReasonNotTriggerScaleUp, "old", now.Add(-time.Minute)),
				podEvent("web", ReasonTriggeredScaleUp, "pod triggered scale-up: [{gpu 1->2 (max: 4)}]", now.Add(-10*time.Second))},
			want: []string{"triggered a scale-up and waits for the new node", "[{gpu 1->2 (max: 4)}] (10s ago)"}},
		{name: "a scheduled pod needs nothing", arg: "web",
			objs: []runtime.Object{builder.Pod("web").Namespace("default").OnNode("n1").Build()},
			want: []string{"is scheduled on node n1"}},
		{name: "a pod the scheduler has not judged", arg: "default/new",
			objs: []runtime.Object{builder.Pod("new").Namespace("default").Build(), statusMap(t, status.Document{})},
			want: []string{"not marked unschedulable by kube-scheduler yet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := explainer(t, nil, tc.objs...).Pod(context.Background(), tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, r, tc.want...)
		})
	}
}

func TestErrors(t *testing.T) {
	e := explainer(t, nil, unschedulable(builder.Pod("p").Namespace("default").Build()), builder.Node("n").Build())
	ctx := context.Background()
	if _, err := e.Pod(ctx, "default/missing"); err == nil || err.Error() != "pod default/missing not found" {
		t.Errorf("missing pod: %v", err)
	}
	if _, err := e.Pod(ctx, "default/p"); err == nil || !strings.Contains(err.Error(), "status ConfigMap kube-system/cluster-autoscaler-status not found") {
		t.Errorf("missing status: %v", err)
	}
	if _, err := e.Node(ctx, "n"); err == nil || !strings.Contains(err.Error(), "status ConfigMap") {
		t.Errorf("missing status for a node: %v", err)
	}
	if _, err := e.Node(ctx, "gone"); err == nil || err.Error() != "node gone not found" {
		t.Errorf("missing node: %v", err)
	}
	if _, err := e.HPA(ctx, "default/none"); err == nil || err.Error() != "HorizontalPodAutoscaler default/none not found" {
		t.Errorf("missing hpa: %v", err)
	}
	if _, err := e.Pod(ctx, "a/b/c"); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
		t.Errorf("bad name: %v", err)
	}
}

func TestNode(t *testing.T) {
	unneeded := builder.Node("idle").Build()
	unneeded.Spec.Taints = []v1.Taint{{Key: scaledown.TaintDeletionCandidate, Value: strconv.FormatInt(now.Add(-90*time.Second).Unix(), 10), Effect: v1.TaintEffectPreferNoSchedule}}
	removing := builder.Node("going").Build()
	removing.Spec.Taints = []v1.Taint{{Key: scaledown.TaintToBeDeleted, Value: strconv.FormatInt(now.Add(-3*time.Second).Unix(), 10), Effect: v1.TaintEffectNoSchedule}}
	ref := func(name string) *status.Ref { return &status.Ref{Namespace: "default", Name: name} }
	st := statusMap(t, status.Document{Nodes: []status.Node{
		{Name: "pdb", State: status.NodeKept, Reason: "BlockedByPod", Pod: ref("db-0"), DrainRule: "NotEnoughPdb",
			Message: "pod default/db-0: PodDisruptionBudget default/db allows no more disruptions (0 allowed, 0 left in this loop)"},
		{Name: "bare", State: status.NodeKept, Reason: "BlockedByPod", Pod: ref("orphan"), DrainRule: "NotReplicated",
			Message: "pod default/orphan has no controller to recreate it; annotate it cluster-autoscaler.kubernetes.io/safe-to-evict=true to let it move"},
		{Name: "full", State: status.NodeKept, Reason: "NoPlaceToMovePods", Pod: ref("big"), Message: "pod default/big fits on no other node (Insufficient)"},
		{Name: "idle", State: status.NodeUnneeded, Reason: "NotUnneededLongEnough", Message: "unneeded for 1m30s of 10m0s (--scale-down-unneeded-time)"},
		{Name: "min", State: status.NodeKept, Reason: "NodeGroupMinSizeReached", Message: "node group gpu is at its minimum size 1"},
	}})
	e := explainer(t, nil, builder.Node("pdb").Build(), builder.Node("bare").Build(), unneeded, removing, builder.Node("busy").Build(),
		builder.Node("full").Build(), builder.Node("min").Build(), st)
	cases := []struct {
		node string
		want []string
	}{
		{"pdb", []string{"is not removed: pod default/db-0 cannot be moved (NotEnoughPdb)", "blocking pod: default/db-0",
			"rule: NotEnoughPdb", "why: pod default/db-0: PodDisruptionBudget default/db allows no more disruptions (0 allowed, 0 left in this loop)\n"}},
		{"bare", []string{"is not removed: pod default/orphan cannot be moved (NotReplicated)", "blocking pod: default/orphan\n",
			"why: pod default/orphan has no controller to recreate it"}},
		{"idle", []string{"is unneeded and waits: unneeded for 1m30s of 10m0s", "unneeded since 2026-03-01T09:58:30Z (1m30s ago)"}},
		{"going", []string{"is being removed", "3s ago"}},
		{"busy", []string{"is not listed in the last loop's status"}},
		{"full", []string{"full: is not removed: pod default/big fits on no other node\n", "pod default/big fits on no other node (Insufficient)"}},
		{"min", []string{"min: is not removed\n", "node group gpu is at its minimum size 1 (NodeGroupMinSizeReached)"}},
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			r, err := e.Node(context.Background(), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, r, tc.want...)
		})
	}
}

// fakeMetrics serves fixed per-pod CPU usage.
type fakeMetrics struct {
	cpu map[string]hpa.PodMetric
	err error
}

func (f fakeMetrics) Resource(context.Context, string, labels.Selector, v1.ResourceName, string) (map[string]hpa.PodMetric, error) {
	return f.cpu, f.err
}
func (f fakeMetrics) Pods(context.Context, string, labels.Selector, string, labels.Selector) (map[string]hpa.PodMetric, error) {
	return nil, errors.New("no custom metrics")
}
func (f fakeMetrics) Object(context.Context, string, autoscalingv2.CrossVersionObjectReference, string, labels.Selector) (int64, error) {
	return 0, errors.New("no custom metrics")
}
func (f fakeMetrics) External(context.Context, string, string, labels.Selector) (int64, error) {
	return 0, errors.New("no external metrics")
}

func TestHPA(t *testing.T) {
	target := int32(50)
	util := int32(90)
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 2,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: v1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &util}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue,
				Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 2"}}}}
	pod := builder.Pod("web-1").Namespace("default").Label("app", "web").CPU("1").OnNode("n1").Build()
	pod.Status.Phase = v1.PodRunning
	start := metav1.NewTime(now.Add(-time.Hour))
	pod.Status.StartTime = &start
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start}}
	client := func() *fake.Clientset {
		c := fake.NewClientset(h, pod)
		// The fake clientset serves no scale subresource: answer as the API
		// server would for a one-replica Deployment selecting app=web.
		c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "scale" {
				return false, nil, nil
			}
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: autoscalingv1.ScaleSpec{Replicas: 1}, Status: autoscalingv1.ScaleStatus{Replicas: 1, Selector: "app=web"}}, nil
		})
		return c
	}

	r, err := explainerWith(t, client(), fakeMetrics{cpu: map[string]hpa.PodMetric{"web-1": {Value: 900, Timestamp: now}}}).HPA(context.Background(), "default/web")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "hpa default/web: 1 replica(s), desired 2 (min 1, max 4)",
		"metric resource cpu: current 90% of request, target 50% of request",
		"condition AbleToScale=True (SucceededRescale)",
		"90% of request on average over 1 pod(s) with samples, target 50%: ratio 1.800",
		"ceil(1.800 x 1 ready pod(s)) = 2",
		"result: scale from 1 to 2")

	r, err = explainerWith(t, client(), fakeMetrics{err: errors.New("the server could not find the requested resource")}).HPA(context.Background(), "default/web")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "cannot be computed: failed to get cpu utilization: unable to get metrics for resource cpu: the server could not find the requested resource",
		"no replica count could be computed")
}
