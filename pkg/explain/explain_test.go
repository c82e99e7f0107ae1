package explain

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
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

func pod(ns, name string) Target { return Target{Kind: KindPod, Namespace: ns, Name: name} }

func unschedulable(p *v1.Pod) *v1.Pod {
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}
	return p
}

func withScheduler(p *v1.Pod, name string) *v1.Pod {
	p.Spec.SchedulerName = name
	return p
}

// event builds an event as the autoscaler's recorder writes it: events on
// cluster-scoped objects live in "default".
func event(kind, ns, name, reason, msg string, at time.Time, annotations map[string]string) *v1.Event {
	evNS := ns
	if evNS == "" {
		evNS = "default"
	}
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name + "." + reason + "." + strconv.FormatInt(at.UnixNano(), 36), Namespace: evNS,
		Annotations: annotations},
		InvolvedObject: v1.ObjectReference{Kind: kind, Name: name, Namespace: ns},
		Reason:         reason, Message: msg, LastTimestamp: metav1.NewTime(at)}
}

func podEvent(pod, reason, msg string, at time.Time) *v1.Event {
	return event("Pod", "default", pod, reason, msg, at, nil)
}

// scaleUpEvent is a TriggeredScaleUp event carrying the scale-ups.
func scaleUpEvent(t *testing.T, pod string, at time.Time, sus ...status.ScaleUp) *v1.Event {
	t.Helper()
	data, err := json.Marshal(status.NewEventScaleUps(sus))
	if err != nil {
		t.Fatal(err)
	}
	return event("Pod", "default", pod, status.EventTriggeredScaleUp, "pod triggered scale-up: [{gpu-a 1->2 (max: 4)}]", at,
		map[string]string{status.AnnotationScaleUps: string(data)})
}

// weighed is a scale-up of gpu-a where the expanders dropped gpu-b on
// waste and cpu on pods.
func weighed() status.ScaleUp {
	return status.ScaleUp{Group: "gpu-a", From: 1, To: 2, Pods: 3, Why: "least-waste", Options: []status.Option{
		{Group: "cpu", NodeCount: 2, PodCount: 1, DroppedBy: "most-pods", Score: "1 pods", BestScore: "3 pods",
			Verdict: "dropped by most-pods: 1 pods, the best had 3 pods"},
		{Group: "gpu-a", NodeCount: 1, PodCount: 3, Chosen: true, Verdict: "chosen"},
		{Group: "gpu-b", NodeCount: 1, PodCount: 3, DroppedBy: "least-waste", Score: "waste 0.750", BestScore: "waste 0.250",
			Verdict: "dropped by least-waste: waste 0.750, the best had waste 0.250"},
	}}
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
		name    string
		objs    []runtime.Object
		target  Target
		outcome string
		want    []string
	}{
		{name: "pending pod listed in the status gets a reason per group", target: pod("default", "big"), outcome: PodNotTriggered,
			objs: []runtime.Object{unschedulable(builder.Pod("big").Namespace("default").Build()), statusMap(t, pending)},
			want: []string{"pod default/big: did not trigger a scale-up", "node group cpu: the pod does not fit a new node: Insufficient nvidia.com/gpu",
				"\n  node group gpu: chosen for other pods; 0 of 1 equivalent pods fit its new nodes\n", "the same holds for 1 equivalent pod(s): default/big-2",
				"kube-scheduler: 0/1 nodes are available", "(status written at 2026-03-01T09:59:55Z (5s ago))"}},
		{name: "pod with a TriggeredScaleUp event waits for its node and says why its group won", target: pod("default", "web"), outcome: PodTriggered,
			objs: []runtime.Object{unschedulable(builder.Pod("web").Namespace("default").Build()), statusMap(t, status.Document{}),
				podEvent("web", status.EventNotTriggerScaleUp, "old", now.Add(-time.Minute)),
				scaleUpEvent(t, "web", now.Add(-10*time.Second), weighed())},
			want: []string{"triggered a scale-up and waits for the new node", "[{gpu-a 1->2 (max: 4)}] (10s ago)",
				"scale-up of node group gpu-a from 1 to 2 for 3 pod(s): least-waste", "the expanders weighed 3 option(s)",
				"    gpu-a: 1 node(s) for 3 pod(s): chosen\n",
				"    gpu-b: 1 node(s) for 3 pod(s): dropped by least-waste: waste 0.750, the best had waste 0.250\n",
				"    cpu: 2 node(s) for 1 pod(s): dropped by most-pods: 1 pods, the best had 3 pods\n"}},
		{name: "a scheduled pod that triggered a scale-up still says why its group won", target: pod("default", "done"), outcome: PodScheduled,
			objs: []runtime.Object{builder.Pod("done").Namespace("default").OnNode("gpu-a-2").Build(),
				scaleUpEvent(t, "done", now.Add(-5*time.Minute), weighed())},
			want: []string{"is scheduled on node gpu-a-2; it needs no scale-up", "while pending it triggered a scale-up (5m0s ago)",
				"gpu-b: 1 node(s) for 3 pod(s): dropped by least-waste"}},
		{name: "a TriggeredScaleUp event without options says so", target: pod("default", "old"), outcome: PodTriggered,
			objs: []runtime.Object{unschedulable(builder.Pod("old").Namespace("default").Build()), statusMap(t, status.Document{}),
				podEvent("old", status.EventTriggeredScaleUp, "pod triggered scale-up: [{gpu 1->2 (max: 4)}]", now.Add(-10*time.Second))},
			want: []string{"carries no record of the options"}},
		{name: "a scheduled pod needs nothing", target: pod("default", "web"), outcome: PodScheduled,
			objs: []runtime.Object{builder.Pod("web").Namespace("default").OnNode("n1").Build()},
			want: []string{"is scheduled on node n1"}},
		{name: "a pod of a scheduler not bypassed is left alone, and says how to change that", target: pod("default", "gang-0"), outcome: PodOtherScheduler,
			objs: []runtime.Object{withScheduler(unschedulable(builder.Pod("gang-0").Namespace("default").Build()), "volcano"),
				statusMap(t, status.Document{BypassedSchedulers: []string{"kai-scheduler"}, OtherSchedulers: []status.SchedulerPods{
					{Scheduler: "volcano", Pods: 4, Reason: status.ReasonSchedulerNotBypassed}}})},
			want: []string{`is placed by scheduler "volcano", which is neither default-scheduler nor in --bypassed-scheduler-names`,
				"the last loop left 4 waiting pod(s) of volcano alone", "add volcano to --bypassed-scheduler-names"}},
		{name: "a bypassed scheduler's pod is not waiting for kube-scheduler's mark", target: pod("default", "kai-0"), outcome: PodNotConsidered,
			objs: []runtime.Object{withScheduler(builder.Pod("kai-0").Namespace("default").Build(), "kai-scheduler"),
				statusMap(t, status.Document{BypassedSchedulers: []string{"kai-scheduler"}})},
			want: []string{"has not been considered by the autoscaler yet"}},
		{name: "a pod the scheduler has not judged", target: pod("default", "new"), outcome: PodNotUnschedulable,
			objs: []runtime.Object{builder.Pod("new").Namespace("default").Build(), statusMap(t, status.Document{})},
			want: []string{"not marked unschedulable by kube-scheduler yet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := explainer(t, nil, tc.objs...).Pod(context.Background(), tc.target)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, r, tc.want...)
			if r.Pod == nil || r.Pod.Outcome != tc.outcome || r.Kind != KindPod {
				t.Errorf("structured answer %+v, want outcome %s", r.Pod, tc.outcome)
			}
		})
	}
}

// The structured answer carries each option's verdict as data: -o json
// writes the answer, not the text.
func TestPodJSONIsTheStructuredAnswer(t *testing.T) {
	e := explainer(t, nil, unschedulable(builder.Pod("web").Namespace("default").Build()), statusMap(t, status.Document{}),
		scaleUpEvent(t, "web", now.Add(-10*time.Second), weighed()))
	r, err := e.Pod(context.Background(), pod("default", "web"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Kind string `json:"kind"`
		Pod  struct {
			Outcome  string `json:"outcome"`
			ScaleUps []struct {
				Group   string `json:"group"`
				Options []struct {
					Group     string `json:"group"`
					Chosen    bool   `json:"chosen"`
					DroppedBy string `json:"droppedBy"`
					Score     string `json:"score"`
				} `json:"options"`
			} `json:"scaleUps"`
		} `json:"pod"`
		Details any `json:"details"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != "pod" || back.Pod.Outcome != PodTriggered || back.Details != nil {
		t.Fatalf("answer %s", data)
	}
	if len(back.Pod.ScaleUps) != 1 || len(back.Pod.ScaleUps[0].Options) != 3 {
		t.Fatalf("scale-ups %s", data)
	}
	o := back.Pod.ScaleUps[0].Options
	if !o[1].Chosen || o[1].Group != "gpu-a" || o[2].DroppedBy != "least-waste" || o[2].Score != "waste 0.750" {
		t.Errorf("options %+v", o)
	}
}

func TestErrors(t *testing.T) {
	e := explainer(t, nil, unschedulable(builder.Pod("p").Namespace("default").Build()), builder.Node("n").Build())
	ctx := context.Background()
	if _, err := e.Pod(ctx, pod("default", "missing")); err == nil || err.Error() != "pod default/missing not found" {
		t.Errorf("missing pod: %v", err)
	}
	if _, err := e.Pod(ctx, pod("default", "p")); err == nil || !strings.Contains(err.Error(), "status ConfigMap kube-system/cluster-autoscaler-status not found") {
		t.Errorf("missing status: %v", err)
	}
	if _, err := e.Node(ctx, "n"); err == nil || !strings.Contains(err.Error(), "status ConfigMap") {
		t.Errorf("missing status for a node: %v", err)
	}
	if _, err := e.Node(ctx, "gone"); err == nil || !strings.HasPrefix(err.Error(), "node gone not found, and no event of the autoscaler names it") {
		t.Errorf("missing node: %v", err)
	}
	if _, err := e.HPA(ctx, Target{Kind: KindHPA, Namespace: "default", Name: "none"}); err == nil || err.Error() != "HorizontalPodAutoscaler default/none not found" {
		t.Errorf("missing hpa: %v", err)
	}
	if _, err := e.Cluster(ctx); err == nil || !strings.Contains(err.Error(), "status ConfigMap kube-system/cluster-autoscaler-status not found") {
		t.Errorf("cluster without status: %v", err)
	}
}

// A pod looked for with -n in the namespace that holds the status is most
// likely -n's earlier meaning: the error says so.
func TestNamespaceFlagOldMeaningHint(t *testing.T) {
	e := explainer(t, nil, statusMap(t, status.Document{}))
	_, err := e.Pod(context.Background(), Target{Kind: KindPod, Namespace: "kube-system", Name: "web", NamespaceFromFlag: true})
	if err == nil || !strings.Contains(err.Error(), "-n/--namespace now names the pod's own namespace; the autoscaler's is --autoscaler-namespace") {
		t.Errorf("err = %v", err)
	}
	_, err = e.Pod(context.Background(), Target{Kind: KindPod, Namespace: "kube-system", Name: "web"})
	if err == nil || strings.Contains(err.Error(), "--autoscaler-namespace") {
		t.Errorf("without -n the hint does not apply: %v", err)
	}
}

func TestNode(t *testing.T) {
	unneeded := builder.Node("idle").Build()
	unneeded.Spec.Taints = []v1.Taint{{Key: disruption.TaintDeletionCandidate, Value: strconv.FormatInt(now.Add(-90*time.Second).Unix(), 10), Effect: v1.TaintEffectPreferNoSchedule}}
	removing := builder.Node("going").Build()
	removing.Spec.Taints = []v1.Taint{{Key: disruption.TaintToBeDeleted, Value: strconv.FormatInt(now.Add(-3*time.Second).Unix(), 10), Effect: v1.TaintEffectNoSchedule}}
	spot := builder.Node("spot").Build()
	spot.Spec.Taints = append(removing.Spec.Taints[:1:1], v1.Taint{Key: "aws-node-termination-handler/spot-itn", Effect: v1.TaintEffectNoSchedule})
	taken := event("Node", "", "spot", status.EventInterrupted,
		"node is being taken away (aws-node-termination-handler/spot-itn): draining by 2026-03-01T10:01:57Z, replacement ordered", now.Add(-3*time.Second),
		map[string]string{status.AnnotationNodeGroup: "gpu-spot", status.AnnotationRemovalReason: status.RemovalInterrupted})
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
		builder.Node("full").Build(), builder.Node("min").Build(), st, spot, taken)
	cases := []struct {
		node  string
		state string
		want  []string
	}{
		{"pdb", status.NodeKept, []string{"is not removed: pod default/db-0 cannot be moved (NotEnoughPdb)", "blocking pod: default/db-0",
			"rule: NotEnoughPdb", "why: pod default/db-0: PodDisruptionBudget default/db allows no more disruptions (0 allowed, 0 left in this loop)\n"}},
		{"bare", status.NodeKept, []string{"is not removed: pod default/orphan cannot be moved (NotReplicated)", "blocking pod: default/orphan\n",
			"why: pod default/orphan has no controller to recreate it"}},
		{"idle", status.NodeUnneeded, []string{"is unneeded and waits: unneeded for 1m30s of 10m0s", "unneeded since 2026-03-01T09:58:30Z (1m30s ago)"}},
		{"going", status.NodeRemoving, []string{"is being removed", "3s ago"}},
		{"spot", status.NodeRemoving, []string{"is being removed", "node is being taken away (aws-node-termination-handler/spot-itn): draining by"}},
		{"busy", NodeNotListed, []string{"is not listed in the last loop's status"}},
		{"full", status.NodeKept, []string{"full: is not removed: pod default/big fits on no other node\n", "pod default/big fits on no other node (Insufficient)"}},
		{"min", status.NodeKept, []string{"min: is not removed\n", "node group gpu is at its minimum size 1 (NodeGroupMinSizeReached)"}},
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			r, err := e.Node(context.Background(), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, r, tc.want...)
			if r.Node == nil || r.Node.State != tc.state || !r.Node.Exists {
				t.Errorf("structured answer %+v, want state %s", r.Node, tc.state)
			}
		})
	}
}
