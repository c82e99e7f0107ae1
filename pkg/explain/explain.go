// Package explain answers "why?" about a live cluster in plain words: why a
// pod did or did not trigger a scale-up, why a node is not removed, and what
// a HorizontalPodAutoscaler computed. It reads what the autoscaler leaves
// behind (the status ConfigMap's structured pendingPods and nodes, the
// TriggeredScaleUp / NotTriggerScaleUp / ScaleDown events, the deletion
// taints) and, for an HPA, replays the controller's arithmetic with
// pkg/hpa on the metrics the metrics APIs serve now.
package explain

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Options configure an Explainer.
type Options struct {
	// Client reads the cluster.
	Client kubernetes.Interface
	// Namespace holds the autoscaler's status ConfigMap (--namespace,
	// kube-system).
	Namespace string
	// StatusConfigMap is its name (--status-config-map-name,
	// cluster-autoscaler-status).
	StatusConfigMap string
	// Metrics reads the metrics APIs for HPA explanations; nil leaves the
	// HPA's own status as the only source.
	Metrics MetricsSource
	// HPA are the controller-manager settings the model assumes.
	HPA hpa.Options
	// Clock; nil means the real clock.
	Clock clock.PassiveClock
}

// DefaultOptions are the upstream defaults for where the status lives.
func DefaultOptions() Options {
	return Options{Namespace: "kube-system", StatusConfigMap: "cluster-autoscaler-status", HPA: hpa.DefaultOptions()}
}

// Explainer answers questions about one cluster.
type Explainer struct {
	o Options
}

// New builds an Explainer.
func New(o Options) (*Explainer, error) {
	if o.Client == nil {
		return nil, fmt.Errorf("explain: Options.Client must be set")
	}
	if o.Namespace == "" || o.StatusConfigMap == "" {
		return nil, fmt.Errorf("explain: the status ConfigMap namespace and name must be set, got %q/%q", o.Namespace, o.StatusConfigMap)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Explainer{o: o}, nil
}

// Report is an answer: a one-line verdict and the details behind it.
type Report struct {
	// Object is what was asked about: "pod default/web-1".
	Object string
	// Verdict is the answer in one line.
	Verdict string
	// Details support the verdict, one fact per line.
	Details []string
}

// String writes the report as text.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", r.Object, r.Verdict)
	for _, d := range r.Details {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}

// WriteTo writes the report as text.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, r.String())
	return int64(n), err
}

func (r *Report) add(format string, args ...any) {
	r.Details = append(r.Details, fmt.Sprintf(format, args...))
}

// status reads and parses the autoscaler's status ConfigMap.
func (e *Explainer) status(ctx context.Context) (*status.Document, error) {
	ns, name := e.o.Namespace, e.o.StatusConfigMap
	cm, err := e.o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("status ConfigMap %s/%s not found: is the autoscaler running in namespace %s with --write-status-configmap=true? (--namespace and --status-config-map-name say where to look)", ns, name, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("status ConfigMap %s/%s: %w", ns, name, err)
	}
	text, ok := cm.Data[status.Key]
	if !ok {
		return nil, fmt.Errorf("status ConfigMap %s/%s has no %q key", ns, name, status.Key)
	}
	d, err := status.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("status ConfigMap %s/%s: %w", ns, name, err)
	}
	return d, nil
}

// statusAge says when the status was written, for the reader to judge.
func (e *Explainer) statusAge(s *status.Document) string {
	t, err := s.DocTime()
	if err != nil {
		return "at " + s.Time
	}
	return fmt.Sprintf("at %s (%s ago)", s.Time, e.o.Clock.Since(t).Round(time.Second))
}

// events lists the events about one object, newest first.
func (e *Explainer) events(ctx context.Context, namespace, kind, name string) ([]v1.Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}
	if namespace != "" {
		sel["involvedObject.namespace"] = namespace
	}
	l, err := e.o.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("listing events of %s %s: %w", kind, name, err)
	}
	// Field selectors narrow the list on a real API server; the check here
	// keeps the answer right where they are not honoured.
	out := l.Items[:0]
	for _, ev := range l.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	return out, nil
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

func (e *Explainer) ago(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return e.o.Clock.Since(t).Round(time.Second).String() + " ago"
}

// splitName reads NS/NAME, or NAME in namespace "default".
func splitName(arg string) (string, string, error) {
	ns, name, found := strings.Cut(arg, "/")
	if !found {
		ns, name = "default", arg
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want NAMESPACE/NAME", arg)
	}
	return ns, name, nil
}

func notFound(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found", kind, name)
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}
