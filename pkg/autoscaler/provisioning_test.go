package autoscaler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// gpu8 is an 8-GPU node; trainer asks for all of one.
func gpu8(name string) *v1.Node {
	return builder.Node(name).CPU("96").Memory("1Ti").GPU(8).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
}

func trainer(name string) *v1.Pod {
	return builder.Pod(name).CPU("64").Memory("512Gi").GPU(8).Toleration("nvidia.com/gpu").Label("job", "train").Build()
}

// request is a ProvisioningRequest of count trainer pods, created at t0.
func request(name, class string, count int32, tmpl *v1.Pod) pr.Request {
	r := &pr.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: pr.Spec{ProvisioningClassName: class, PodSets: []pr.PodSet{{PodTemplateRef: pr.Reference{Name: "tmpl-" + name}, Count: count}}},
	}
	pt := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl-" + name, Namespace: "default"},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}
	return pr.Request{ProvisioningRequest: r, Templates: map[string]*v1.PodTemplate{pt.Name: pt}}
}

func withProvReqs(o *autoscaler.Options) { o.ProvisioningRequests.Enabled = true }

// conditionsOf renders the conditions a plan writes to a request, e.g.
// "Accepted=True/Accepted Provisioned=False/CapacityIsNotFound".
func conditionsOf(p autoscaler.Plan, key string) (string, []metav1.Condition) {
	for _, a := range p.Actions {
		if s, ok := a.(autoscaler.SetRequestConditions); ok && s.Key() == key {
			var parts []string
			for _, c := range s.Conditions {
				parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
			}
			return strings.Join(parts, " "), s.Conditions
		}
	}
	return "", nil
}

func find(cs []metav1.Condition, typ string) metav1.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func gpuWorld(t *testing.T, max int) *snapshot.Snapshot {
	s := snapshot.New()
	if err := s.SetNodeGroup(builder.NodeGroup("gpu").Max(max).Template(gpu8("gpu-t")).Build()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A 4-pod atomic request gets its 4 nodes in one scale-up, tagged with the
// request, and is provisioned in the same status write that accepts it.
func TestRequestAtomicGetsAllNodes(t *testing.T) {
	a := newAutoscaler(t, withProvReqs)
	s := gpuWorld(t, 10)
	req := request("train", pr.ClassBestEffortAtomicScaleUp, 4, trainer("x"))
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, ProvisioningRequests: []pr.Request{req}})
	if got := only(plan, "scale-up"); got != "scale-up gpu+4" {
		t.Fatalf("scale-ups %q, want gpu+4", got)
	}
	su := plan.Actions[0].(autoscaler.ScaleUp)
	if len(su.Requests) != 1 || su.Requests[0] != "default/train" {
		t.Errorf("scale-up requests %v, want [default/train]", su.Requests)
	}
	got, _ := conditionsOf(plan, "default/train")
	if got != "Accepted=True/Accepted Provisioned=True/CapacityIsProvisioned" {
		t.Errorf("conditions %q", got)
	}
}

// A group whose max allows only 3 of the 4 nodes adds none, and the
// condition says why.
func TestRequestAtomicNoneWhenMaxAllowsThree(t *testing.T) {
	a := newAutoscaler(t, withProvReqs)
	s := gpuWorld(t, 3)
	req := request("train", pr.ClassBestEffortAtomicScaleUp, 4, trainer("x"))
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, ProvisioningRequests: []pr.Request{req}})
	if got := only(plan, "scale-up"); got != "" {
		t.Fatalf("scaled up %q for a request that cannot get all its nodes", got)
	}
	got, cs := conditionsOf(plan, "default/train")
	if got != "Accepted=True/Accepted Provisioned=False/CapacityIsNotFound" {
		t.Fatalf("conditions %q", got)
	}
	msg := find(cs, pr.Provisioned).Message
	for _, want := range []string{"node group gpu", "only 3 of 4 pods", "max size 3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}

// Regular pending pods still scale up in the loop where a request finds no
// room; the request takes nothing from them.
func TestRequestWithoutRoomLeavesOtherPodsAlone(t *testing.T) {
	a := newAutoscaler(t, withProvReqs)
	s := gpuWorld(t, 3)
	req := request("train", pr.ClassBestEffortAtomicScaleUp, 4, trainer("x"))
	pending := owned(trainer("other"))
	plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, Pending: []*v1.Pod{pending},
		ProvisioningRequests: []pr.Request{req}})
	if got := only(plan, "scale-up"); got != "scale-up gpu+1" {
		t.Fatalf("scale-ups %q, want gpu+1 for the regular pod", got)
	}
}

// check-capacity finds room on existing nodes and adds none; without room
// it says so and adds none either; noRetry makes that final.
func TestRequestCheckCapacity(t *testing.T) {
	s := gpuWorld(t, 10)
	for i := 0; i < 2; i++ {
		if err := s.AddNodeInGroup(gpu8(fmt.Sprintf("gpu-%d", i)), "gpu"); err != nil {
			t.Fatal(err)
		}
	}
	setTarget(t, s, "gpu", 2)
	cases := []struct {
		name    string
		count   int32
		noRetry bool
		want    string
	}{
		{"room for both", 2, false, "Accepted=True/Accepted Provisioned=True/CapacityIsFound CapacityAvailable=True/CapacityIsFound"},
		{"no room for three", 3, false, "Accepted=True/Accepted Provisioned=False/CapacityIsNotFound CapacityAvailable=False/CapacityIsNotFound"},
		{"no room, no retry", 3, true, "Accepted=True/Accepted Failed=True/CapacityIsNotFound CapacityAvailable=False/CapacityIsNotFound"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAutoscaler(t, withProvReqs)
			req := request("check", pr.ClassCheckCapacity, c.count, trainer("x"))
			if c.noRetry {
				req.Spec.Parameters = map[string]string{pr.ParamNoRetry: "true"}
			}
			plan := step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, ProvisioningRequests: []pr.Request{req}})
			if got := only(plan, "scale-up"); got != "" {
				t.Errorf("check-capacity scaled up: %q", got)
			}
			if got, _ := conditionsOf(plan, "default/check"); got != c.want {
				t.Errorf("conditions %q, want %q", got, c.want)
			}
		})
	}
}

func provisioned(r pr.Request, at time.Time) pr.Request {
	r.Status.Conditions = []metav1.Condition{
		pr.NewCondition(r.ProvisioningRequest, pr.Accepted, metav1.ConditionTrue, pr.ReasonAccepted, pr.MsgAccepted, metav1.NewTime(at)),
		pr.NewCondition(r.ProvisioningRequest, pr.Provisioned, metav1.ConditionTrue, pr.ReasonCapacityIsProvisioned, "", metav1.NewTime(at)),
	}
	return r
}

// A booking ends after 10 minutes, or as soon as every pod of the request
// runs; a request never provisioned fails after 7 days.
func TestRequestExpiry(t *testing.T) {
	s := gpuWorld(t, 10)
	if err := s.AddNodeInGroup(gpu8("gpu-0"), "gpu"); err != nil {
		t.Fatal(err)
	}
	setTarget(t, s, "gpu", 1)
	booked := provisioned(request("train", pr.ClassBestEffortAtomicScaleUp, 1, trainer("x")), t0)

	a := newAutoscaler(t, withProvReqs)
	plan := step(t, a, autoscaler.Input{Now: t0.Add(9 * time.Minute), Snapshot: s, ProvisioningRequests: []pr.Request{booked}})
	if got, _ := conditionsOf(plan, "default/train"); got != "" {
		t.Errorf("a 9-minute-old booking changed: %q", got)
	}
	if plan.NextDecisionAt.IsZero() || plan.NextDecisionAt.After(t0.Add(10*time.Minute)) {
		t.Errorf("next decision %v, want the booking's end at %v", plan.NextDecisionAt, t0.Add(10*time.Minute))
	}
	plan = step(t, a, autoscaler.Input{Now: t0.Add(10*time.Minute + time.Second), Snapshot: s, ProvisioningRequests: []pr.Request{booked}})
	if got, _ := conditionsOf(plan, "default/train"); got != "BookingExpired=True/CapacityReservationTimeExpired" {
		t.Errorf("after 10 minutes: %q", got)
	}

	consumer := trainer("worker-0")
	consumer.Annotations = map[string]string{pr.AnnotationConsume: "train"}
	consumer.Spec.NodeName = "gpu-0"
	if err := s.AddPod(consumer); err != nil {
		t.Fatal(err)
	}
	plan = step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s,
		ProvisioningRequests: []pr.Request{booked}})
	if got, _ := conditionsOf(plan, "default/train"); got != "BookingExpired=True/CapacityBookingConsumed" {
		t.Errorf("with its pod running: %q", got)
	}

	old := request("old", pr.ClassBestEffortAtomicScaleUp, 1, trainer("x"))
	old.Status.Conditions = []metav1.Condition{pr.NewCondition(old.ProvisioningRequest, pr.Provisioned, metav1.ConditionFalse,
		pr.ReasonCapacityIsNotFound, "", metav1.NewTime(t0.Add(7*24*time.Hour)))}
	plan = step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(7*24*time.Hour + time.Minute), Snapshot: s,
		ProvisioningRequests: []pr.Request{old}})
	if got, _ := conditionsOf(plan, "default/old"); got != "Failed=True/Expired" {
		t.Errorf("a week old and never provisioned: %q", got)
	}
}

// A booking holds its room: a regular pod that would fit the booked node
// gets a node of its own; pods that consume a request trigger nothing.
func TestRequestBookingAndConsumers(t *testing.T) {
	s := gpuWorld(t, 10)
	if err := s.AddNodeInGroup(gpu8("gpu-0"), "gpu"); err != nil {
		t.Fatal(err)
	}
	setTarget(t, s, "gpu", 1)
	booked := provisioned(request("train", pr.ClassBestEffortAtomicScaleUp, 1, trainer("x")), t0)
	regular := owned(trainer("regular"))

	plan := step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s,
		Pending: []*v1.Pod{regular}, ProvisioningRequests: []pr.Request{booked}})
	if got := only(plan, "scale-up"); got != "scale-up gpu+1" {
		t.Errorf("with the node booked: %q, want a node for the regular pod", got)
	}
	plan = step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, Pending: []*v1.Pod{regular}})
	if got := only(plan, "scale-up"); got != "" {
		t.Errorf("without the booking: %q, want the pod on the free node", got)
	}

	var consumers []*v1.Pod
	for i := 0; i < 3; i++ {
		p := owned(trainer(fmt.Sprintf("worker-%d", i)))
		p.Annotations = map[string]string{pr.AnnotationConsumeDeprecated: "train"}
		consumers = append(consumers, p)
	}
	plan = step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s, Pending: consumers,
		ProvisioningRequests: []pr.Request{booked}})
	if got := only(plan, "scale-up"); got != "" {
		t.Errorf("consumers of a request scaled up by themselves: %q", got)
	}
	reasons := 0
	for _, p := range plan.Status.Pending {
		for _, r := range p.Reasons {
			if r.Reason == "ConsumesProvisioningRequest" {
				reasons += len(p.Pods)
			}
		}
	}
	if reasons != 3 {
		t.Errorf("%d pending pods reported as consumers, want 3: %+v", reasons, plan.Status.Pending)
	}
}

// Pods that must share a zone get all their nodes in one zone's group,
// even with --balance-similar-node-groups; without that need the nodes
// are balanced.
func TestRequestZoneKept(t *testing.T) {
	mk := func(affinity bool) autoscaler.Plan {
		s := snapshot.New()
		for _, z := range []string{"a", "b"} {
			tmpl := gpu8("t-" + z)
			tmpl.Labels[v1.LabelTopologyZone] = "zone-" + z
			if err := s.SetNodeGroup(builder.NodeGroup("gpu-" + z).Max(10).Template(tmpl).Build()); err != nil {
				t.Fatal(err)
			}
		}
		pod := trainer("x")
		if affinity {
			pod = builder.Pod("x").CPU("64").Memory("512Gi").GPU(8).Toleration("nvidia.com/gpu").Label("job", "train").
				Affinity(v1.LabelTopologyZone, "job", "train").Build()
		}
		a := newAutoscaler(t, withProvReqs, func(o *autoscaler.Options) { o.ScaleUp.BalanceSimilarNodeGroups = true })
		return step(t, a, autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s,
			ProvisioningRequests: []pr.Request{request("train", pr.ClassBestEffortAtomicScaleUp, 4, pod)}})
	}
	if got := only(mk(false), "scale-up"); got != "scale-up gpu-a+2; scale-up gpu-b+2" {
		t.Errorf("without zone affinity: %q, want balanced", got)
	}
	got := only(mk(true), "scale-up")
	if got != "scale-up gpu-a+4" && got != "scale-up gpu-b+4" {
		t.Errorf("with zone affinity: %q, want 4 nodes in one zone", got)
	}
}

// A request that found no room is tried again after the backoff (1m, then
// 2m), not every loop; the core remembers what it wrote while the input
// lags.
func TestRequestRetryBackoff(t *testing.T) {
	a := newAutoscaler(t, withProvReqs)
	s := gpuWorld(t, 3)
	req := request("train", pr.ClassBestEffortAtomicScaleUp, 4, trainer("x"))
	in := func(at time.Time, outcomes ...autoscaler.Outcome) autoscaler.Input {
		return autoscaler.Input{Now: at, Snapshot: s, ProvisioningRequests: []pr.Request{req}, Outcomes: outcomes}
	}
	written := func(p autoscaler.Plan, at time.Time) []autoscaler.Outcome {
		var out []autoscaler.Outcome
		for _, act := range p.Actions {
			if w, ok := act.(autoscaler.SetRequestConditions); ok {
				out = append(out, autoscaler.RequestConditionsSet{Namespace: w.Namespace, Name: w.Name, UID: w.UID, Conditions: w.Conditions, At: at})
			}
		}
		return out
	}
	start := t0.Add(time.Minute)
	plan := step(t, a, in(start))
	if got, _ := conditionsOf(plan, "default/train"); !strings.Contains(got, "Provisioned=False") {
		t.Fatalf("first attempt: %q", got)
	}
	// The input still shows no condition (the informer lags): no new attempt.
	plan = step(t, a, in(start.Add(30*time.Second), written(plan, start)...))
	if got, _ := conditionsOf(plan, "default/train"); got != "" {
		t.Errorf("tried again after 30s: %q", got)
	}
	plan = step(t, a, in(start.Add(61*time.Second)))
	if got, _ := conditionsOf(plan, "default/train"); !strings.Contains(got, "Provisioned=False") {
		t.Fatalf("not tried again after the 1m backoff: %q", got)
	}
	at := start.Add(61 * time.Second)
	plan = step(t, a, in(at.Add(90*time.Second), written(plan, at)...))
	if got, _ := conditionsOf(plan, "default/train"); got != "" {
		t.Errorf("tried again 90s after the second attempt, before the 2m backoff: %q", got)
	}
	plan = step(t, a, in(at.Add(121*time.Second)))
	if got, _ := conditionsOf(plan, "default/train"); got == "" {
		t.Errorf("not tried again after the 2m backoff")
	}
}

// A request whose PodTemplate is missing fails, naming it; one of a class
// this autoscaler does not serve is left alone.
func TestRequestMissingTemplateAndForeignClass(t *testing.T) {
	s := gpuWorld(t, 10)
	bad := request("bad", pr.ClassBestEffortAtomicScaleUp, 2, trainer("x"))
	bad.Templates = nil
	foreign := request("foreign", "example.com/another-class", 2, trainer("x"))
	plan := step(t, newAutoscaler(t, withProvReqs), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s,
		ProvisioningRequests: []pr.Request{bad, foreign}})
	got, cs := conditionsOf(plan, "default/bad")
	if got != "Failed=True/FailedToCreatePods" || !strings.Contains(find(cs, pr.Failed).Message, "tmpl-bad") {
		t.Errorf("missing template: %q %+v", got, cs)
	}
	if got, _ := conditionsOf(plan, "default/foreign"); got != "" {
		t.Errorf("foreign class touched: %q", got)
	}
	if got := only(plan, "scale-up"); got != "" {
		t.Errorf("scaled up: %q", got)
	}
	plan = step(t, newAutoscaler(t), autoscaler.Input{Now: t0.Add(time.Minute), Snapshot: s,
		ProvisioningRequests: []pr.Request{request("off", pr.ClassBestEffortAtomicScaleUp, 1, trainer("x"))}})
	if len(plan.Actions) != 0 {
		t.Errorf("acted on a request with --enable-provisioning-requests=false: %q", summary(plan))
	}
}
