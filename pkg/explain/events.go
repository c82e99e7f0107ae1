package explain

import (
	"context"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// EventRecord is one event the autoscaler wrote, with the facts its
// annotations carry.
type EventRecord struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Count   int32     `json:"count,omitempty"`
	// Object is what the event is about: "Node n1", "Pod default/web".
	Object string `json:"object,omitempty"`
	// From the annotations (status.Annotation*), when present.
	NodeGroup     string `json:"nodeGroup,omitempty"`
	Node          string `json:"node,omitempty"`
	RemovalReason string `json:"removalReason,omitempty"`
}

func record(ev v1.Event) EventRecord {
	obj := ev.InvolvedObject.Kind + " " + ev.InvolvedObject.Name
	if ev.InvolvedObject.Namespace != "" {
		obj = ev.InvolvedObject.Kind + " " + ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
	}
	return EventRecord{Reason: ev.Reason, Message: ev.Message, Time: eventTime(ev), Count: ev.Count, Object: obj,
		NodeGroup: ev.Annotations[status.AnnotationNodeGroup], Node: ev.Annotations[status.AnnotationNode],
		RemovalReason: ev.Annotations[status.AnnotationRemovalReason]}
}

// eventQuery selects events: about one kind of object, optionally one
// name and namespace, with one of the reasons (any when none).
type eventQuery struct {
	namespace, kind, name string
	reasons               []string
}

// events lists the events a query selects, newest first.
func (e *Explainer) events(ctx context.Context, q eventQuery) ([]v1.Event, error) {
	sel := fields.Set{"involvedObject.kind": q.kind}
	if q.name != "" {
		sel["involvedObject.name"] = q.name
	}
	if len(q.reasons) == 1 {
		sel["reason"] = q.reasons[0]
	}
	l, err := e.o.Client.CoreV1().Events(q.namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		what := q.kind
		if q.name != "" {
			what += " " + q.name
		}
		return nil, fmt.Errorf("listing events of %s: %w", what, err)
	}
	// Field selectors narrow the list on a real API server; the check here
	// keeps the answer right where they are not honoured.
	out := l.Items[:0]
	for _, ev := range l.Items {
		if ev.InvolvedObject.Kind == q.kind && (q.name == "" || ev.InvolvedObject.Name == q.name) && q.wants(ev.Reason) {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	return out, nil
}

func (q eventQuery) wants(reason string) bool {
	if len(q.reasons) == 0 {
		return true
	}
	for _, r := range q.reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// statusEvents lists the events on the status ConfigMap with one of the
// reasons, newest first.
func (e *Explainer) statusEvents(ctx context.Context, reasons ...string) ([]v1.Event, error) {
	return e.events(ctx, eventQuery{namespace: e.o.AutoscalerNamespace, kind: "ConfigMap", name: e.o.StatusConfigMap, reasons: reasons})
}

// latest returns the newest event with one of the reasons.
func latest(events []v1.Event, reasons ...string) *v1.Event {
	for i := range events {
		for _, r := range reasons {
			if events[i].Reason == r {
				return &events[i]
			}
		}
	}
	return nil
}

func eventTime(ev v1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// eventLine writes a record for people: "ScaleDown 3m0s ago: message".
func (e *Explainer) eventLine(r EventRecord) string {
	return fmt.Sprintf("%s %s: %s", r.Reason, e.ago(r.Time), r.Message)
}
