package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Pod outcomes (PodAnswer.Outcome).
const (
	PodScheduled = "Scheduled"
	PodDeleting  = "Deleting"
	// PodNotTriggered: the last loop's status lists the pod with why no
	// group helps it.
	PodNotTriggered = "NotTriggered"
	// PodTriggered: the pod triggered a scale-up and waits for its node.
	PodTriggered = "Triggered"
	// PodNotUnschedulable: kube-scheduler has not marked it unschedulable.
	PodNotUnschedulable = "NotUnschedulable"
	// PodNotTriggeredEarlier: an earlier loop said why not; the last
	// status no longer lists it.
	PodNotTriggeredEarlier = "NotTriggeredEarlier"
	// PodNotConsidered: nothing says the autoscaler looked at it yet.
	PodNotConsidered = "NotConsidered"
	// PodOtherScheduler: its scheduler is neither default-scheduler nor in
	// --bypassed-scheduler-names; the autoscaler leaves it alone.
	PodOtherScheduler = "OtherScheduler"
)

// PodAnswer is why a pod did or did not trigger a scale-up.
type PodAnswer struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Buffers are the CapacityBuffers of the status, for a pending pod:
	// the room their chunks hold on nodes is the pod's to take.
	Buffers []status.Buffer `json:"buffers,omitempty"`
	// Outcome is one of the Pod* codes.
	Outcome string `json:"outcome"`
	// Scheduler is the pod's scheduler when it is not default-scheduler;
	// LeftAlone says why the autoscaler leaves its pods alone, when it does.
	Scheduler        string                `json:"scheduler,omitempty"`
	LeftAlone        *status.SchedulerPods `json:"leftAlone,omitempty"`
	Node             string                `json:"node,omitempty"`
	SchedulerMessage string                `json:"schedulerMessage,omitempty"`
	// Reasons are why each node group cannot help the pod (the status's
	// pendingPods entry listing it); OtherPods are some of the equivalent
	// pods the same holds for, EquivalentPods counts them all.
	Reasons        []status.GroupReason `json:"reasons,omitempty"`
	EquivalentPods int                  `json:"equivalentPods,omitempty"`
	OtherPods      []string             `json:"otherPods,omitempty"`
	// ScaleUps are the scale-ups of the loop the pod triggered, each with
	// every option the expanders weighed and what they made of it (read
	// from its TriggeredScaleUp event).
	ScaleUps       []status.ScaleUp `json:"scaleUps,omitempty"`
	OptionsOmitted int              `json:"optionsOmitted,omitempty"`
	// GroupsScalingUp are the node groups with a scale-up in progress or
	// backed off, for a pod waiting for its node.
	GroupsScalingUp []GroupScaleUp `json:"groupsScalingUp,omitempty"`
	// Event is the newest TriggeredScaleUp or NotTriggerScaleUp event.
	Event  *EventRecord `json:"event,omitempty"`
	Status *StatusInfo  `json:"status,omitempty"`
}

// GroupScaleUp is a node group's scale-up condition.
type GroupScaleUp struct {
	Group        string `json:"group"`
	Status       string `json:"status"`
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Pod explains whether a pod triggered a scale-up, why its group was
// chosen over the others, and if it did not, why not for each node group.
func (e *Explainer) Pod(ctx context.Context, t Target) (Report, error) {
	key := t.Namespace + "/" + t.Name
	pod, err := e.o.Client.CoreV1().Pods(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return Report{}, e.objectNotFound(ctx, t, "pod", err)
	}
	events, err := e.events(ctx, eventQuery{namespace: t.Namespace, kind: "Pod", name: t.Name})
	if err != nil {
		return Report{}, err
	}
	a := &PodAnswer{Namespace: t.Namespace, Name: t.Name}
	last := latest(events, status.EventTriggeredScaleUp, status.EventNotTriggerScaleUp)
	if last != nil {
		rec := record(*last)
		a.Event = &rec
		if last.Reason == status.EventTriggeredScaleUp {
			a.ScaleUps, a.OptionsOmitted = eventScaleUps(*last)
		}
	}
	switch {
	case pod.Spec.NodeName != "":
		a.Outcome, a.Node = PodScheduled, pod.Spec.NodeName
	case pod.DeletionTimestamp != nil:
		a.Outcome = PodDeleting
	default:
		if err := e.pendingPod(ctx, pod, key, a); err != nil {
			return Report{}, err
		}
	}
	r := Report{Kind: KindPod, Object: "pod " + key, Pod: a}
	e.podText(&r, a)
	return r, nil
}

// pendingPod fills the answer for a pod not on a node.
func (e *Explainer) pendingPod(ctx context.Context, pod *v1.Pod, key string, a *PodAnswer) error {
	st, err := e.status(ctx)
	if err != nil {
		return err
	}
	info := e.statusInfo(st)
	a.Status = &info
	a.SchedulerMessage = unschedulableMessage(pod)
	a.Buffers = st.CapacityBuffers
	if p, ok := st.FindPending(key); ok {
		a.Outcome, a.Reasons = PodNotTriggered, p.Reasons
		if p.Count > 1 {
			a.EquivalentPods, a.OtherPods = p.Count-1, others(p.Pods, key)
		}
		return nil
	}
	if name := pending.SchedulerOf(pod); name != v1.DefaultSchedulerName {
		a.Scheduler = name
	}
	switch left, isLeft := st.OtherScheduler(a.Scheduler); {
	case a.Scheduler != "" && !st.Bypassed(a.Scheduler):
		// Left alone whether or not the last loop met it: the status lists
		// only schedulers that had waiting pods then.
		a.Outcome = PodOtherScheduler
		if !isLeft {
			left = status.SchedulerPods{Scheduler: a.Scheduler, Reason: status.ReasonSchedulerNotBypassed}
		}
		a.LeftAlone = &left
	case a.Event != nil && a.Event.Reason == status.EventTriggeredScaleUp:
		a.Outcome = PodTriggered
		for _, g := range st.NodeGroups {
			if g.ScaleUp.Status == status.ActivityNone || g.ScaleUp.Status == "" {
				continue
			}
			gs := GroupScaleUp{Group: g.Name, Status: g.ScaleUp.Status}
			if b := g.ScaleUp.BackoffInfo; b != nil {
				gs.ErrorCode, gs.ErrorMessage = b.ErrorCode, b.ErrorMessage
			}
			a.GroupsScalingUp = append(a.GroupsScalingUp, gs)
		}
	case a.SchedulerMessage == "" && a.Scheduler == "":
		a.Outcome = PodNotUnschedulable
	case a.Event != nil:
		a.Outcome = PodNotTriggeredEarlier
	default:
		a.Outcome = PodNotConsidered
	}
	return nil
}

// eventScaleUps reads the scale-ups a TriggeredScaleUp event carries.
func eventScaleUps(ev v1.Event) ([]status.ScaleUp, int) {
	text, ok := ev.Annotations[status.AnnotationScaleUps]
	if !ok {
		return nil, 0
	}
	var s status.EventScaleUps
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, 0
	}
	return s.ScaleUps, s.OptionsOmitted
}

func (e *Explainer) podText(r *Report, a *PodAnswer) {
	switch a.Outcome {
	case PodScheduled:
		r.Verdict = "is scheduled on node " + a.Node + "; it needs no scale-up"
		if a.Event != nil && a.Event.Reason == status.EventTriggeredScaleUp {
			r.add("while pending it triggered a scale-up (%s): %s", e.ago(a.Event.Time), a.Event.Message)
		}
	case PodDeleting:
		r.Verdict = "is being deleted; the autoscaler ignores it"
		return
	case PodNotTriggered:
		r.Verdict = "did not trigger a scale-up"
	case PodTriggered:
		r.Verdict = "triggered a scale-up and waits for the new node"
		r.add("%s (%s)", a.Event.Message, e.ago(a.Event.Time))
	case PodNotUnschedulable:
		r.Verdict = "is not marked unschedulable by kube-scheduler yet; the autoscaler acts only on unschedulable pods"
	case PodNotTriggeredEarlier:
		r.Verdict = "did not trigger a scale-up when last considered"
		r.add("%s (%s)", a.Event.Message, e.ago(a.Event.Time))
	case PodNotConsidered:
		r.Verdict = "has not been considered by the autoscaler yet"
	case PodOtherScheduler:
		r.Verdict = fmt.Sprintf("is placed by scheduler %q, which is neither %s nor in --bypassed-scheduler-names; "+
			"the autoscaler leaves it alone", a.Scheduler, v1.DefaultSchedulerName)
		if a.LeftAlone.Pods > 0 {
			r.add("the last loop left %d waiting pod(s) of %s alone", a.LeftAlone.Pods, a.Scheduler)
		}
		r.add("to have it considered as soon as it waits for a node, add %s to --bypassed-scheduler-names", a.Scheduler)
	}
	if a.SchedulerMessage != "" {
		r.add("kube-scheduler: %s", a.SchedulerMessage)
	}
	for _, gr := range a.Reasons {
		if gr.Group == "" {
			r.add("%s", gr.Message)
		} else {
			r.add("node group %s: %s", gr.Group, gr.Message)
		}
	}
	if a.EquivalentPods > 0 {
		r.add("the same holds for %d equivalent pod(s): %s", a.EquivalentPods, strings.Join(a.OtherPods, ", "))
	}
	e.scaleUpText(r, a.ScaleUps, a.OptionsOmitted)
	if a.Outcome == PodTriggered && a.Event != nil && len(a.ScaleUps) == 0 {
		r.add("(its TriggeredScaleUp event carries no record of the options the expanders weighed)")
	}
	for _, g := range a.GroupsScalingUp {
		if g.ErrorMessage != "" {
			r.add("node group %s: scale-up %s: %s (%s)", g.Group, g.Status, g.ErrorMessage, g.ErrorCode)
		} else {
			r.add("node group %s: scale-up %s", g.Group, g.Status)
		}
	}
	podBufferText(r, a.Buffers)
	if a.Status != nil {
		switch a.Outcome {
		case PodNotTriggered, PodTriggered:
			r.add("(status written %s)", e.statusTimeText(a.Status.Time))
		default:
			r.add("the status written %s does not list it", e.statusTimeText(a.Status.Time))
		}
	}
}

// scaleUpText writes scale-ups and why each group was chosen over the
// others.
func (e *Explainer) scaleUpText(r *Report, sus []status.ScaleUp, omitted int) {
	for _, su := range sus {
		line := fmt.Sprintf("scale-up of node group %s from %d to %d for %d pod(s)", su.Group, su.From, su.To, su.Pods)
		if su.Why != "" {
			line += ": " + su.Why
		}
		r.add("%s", line)
		if len(su.Options) > 1 {
			r.add("  the expanders weighed %d option(s):", len(su.Options))
		}
		for _, o := range su.Options {
			r.add("    %s: %d node(s) for %d pod(s): %s", o.Group, o.NodeCount, o.PodCount, optionVerdict(o))
		}
	}
	if omitted > 0 {
		r.add("  (%d more option(s) not recorded in the event)", omitted)
	}
}

// optionVerdict says what the expander chain made of an option, from its
// structured verdict where the status has one.
func optionVerdict(o status.Option) string {
	switch {
	case o.Chosen:
		return "chosen"
	case o.LostTieBreak:
		return "tied with the chosen group to the end; lost the random tie-break"
	case o.DroppedBy != "" && o.Score != "":
		return fmt.Sprintf("dropped by %s: %s, the best had %s", o.DroppedBy, o.Score, o.BestScore)
	case o.DroppedBy != "":
		return "dropped by " + o.DroppedBy
	}
	return o.Verdict
}

func (e *Explainer) statusTimeText(t string) string {
	return e.statusAge(&status.Document{Time: t})
}

func others(all []string, key string) []string {
	out := make([]string, 0, len(all))
	for _, p := range all {
		if p != key {
			out = append(out, p)
		}
	}
	const show = 5
	if len(out) > show {
		return append(out[:show], "...")
	}
	return out
}

// unschedulableMessage is kube-scheduler's message when it could not place
// the pod, or "".
func unschedulableMessage(pod *v1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			if c.Message == "" {
				return "unschedulable"
			}
			return c.Message
		}
	}
	return ""
}

// objectNotFound explains a missing pod or HPA. When -n was given and
// names the namespace the autoscaler runs in, the user most likely meant
// the flag's earlier meaning: say so.
func (e *Explainer) objectNotFound(ctx context.Context, t Target, kind string, err error) error {
	base := notFound(kind, t.Namespace+"/"+t.Name, err)
	if !apierrors.IsNotFound(err) || !t.NamespaceFromFlag {
		return base
	}
	_, cmErr := e.o.Client.CoreV1().ConfigMaps(t.Namespace).Get(ctx, e.o.StatusConfigMap, metav1.GetOptions{})
	if cmErr != nil {
		return base
	}
	return fmt.Errorf("%w (namespace %s holds the autoscaler's status: -n/--namespace now names the %s's own namespace; the autoscaler's is --autoscaler-namespace)",
		base, t.Namespace, kind)
}
