// Package explain answers "why?" about a live cluster: why a pod did or did
// not trigger a scale-up and why its group was chosen over the others, why
// a node is not removed or why a node that is gone was removed, the
// cluster's and a node group's autoscaling state, and what a
// HorizontalPodAutoscaler computed and from which metrics-adapter rule.
//
// It decides nothing itself. It reads what the autoscaler publishes: the
// status ConfigMap (pkg/status Document), the events it writes on pods,
// nodes and the ConfigMap with their annotations (status.Annotation*), and
// the deletion taints; for an HPA it replays the controller's arithmetic
// with pkg/hpa and asks the metrics adapter's own discovery code which rule
// serves each metric. Every answer is a Report: structured data (for -o
// json and yaml) and the same in lines of text.
package explain

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Options configure an Explainer.
type Options struct {
	// Client reads the cluster.
	Client kubernetes.Interface
	// AutoscalerNamespace holds the autoscaler's status ConfigMap and its
	// events (--autoscaler-namespace; the autoscaler's --namespace,
	// kube-system).
	AutoscalerNamespace string
	// StatusConfigMap is its name (--status-config-map-name,
	// cluster-autoscaler-status).
	StatusConfigMap string
	// Metrics reads the metrics APIs for HPA explanations; nil leaves the
	// HPA's own status as the only source.
	Metrics MetricsSource
	// Rules says which metrics-adapter rule serves an HPA's metric; nil
	// answers that the rule is not known.
	Rules RuleFinder
	// HPA are the controller-manager settings the model assumes.
	HPA hpa.Options
	// Clock; nil means the real clock.
	Clock clock.PassiveClock
}

// DefaultOptions are the upstream defaults for where the status lives.
func DefaultOptions() Options {
	return Options{AutoscalerNamespace: "kube-system", StatusConfigMap: "cluster-autoscaler-status", HPA: hpa.DefaultOptions()}
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
	if o.AutoscalerNamespace == "" || o.StatusConfigMap == "" {
		return nil, fmt.Errorf("explain: the status ConfigMap namespace and name must be set, got %q/%q", o.AutoscalerNamespace, o.StatusConfigMap)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Explainer{o: o}, nil
}

// Explain answers about one target.
func (e *Explainer) Explain(ctx context.Context, t Target) (Report, error) {
	switch t.Kind {
	case KindPod:
		return e.Pod(ctx, t)
	case KindNode:
		return e.Node(ctx, t.Name)
	case KindHPA:
		return e.HPA(ctx, t)
	case KindNodeGroup:
		return e.NodeGroup(ctx, t.Name)
	case KindCluster:
		return e.Cluster(ctx)
	}
	return Report{}, fmt.Errorf("explain: unknown kind %q", t.Kind)
}

// Report is an answer: a one-line verdict, the structured answer for the
// kind asked about, and the same as lines of text.
type Report struct {
	// Kind is what was asked about: pod, node, hpa, nodegroup, cluster.
	Kind Kind `json:"kind"`
	// Object names it: "pod default/web-1".
	Object string `json:"object"`
	// Verdict is the answer in one line.
	Verdict string `json:"verdict"`
	// One of these holds the answer, by Kind.
	Pod       *PodAnswer       `json:"pod,omitempty"`
	Node      *NodeAnswer      `json:"node,omitempty"`
	HPA       *HPAAnswer       `json:"hpa,omitempty"`
	NodeGroup *NodeGroupAnswer `json:"nodeGroup,omitempty"`
	Cluster   *ClusterAnswer   `json:"cluster,omitempty"`
	// Details are the answer's facts for people, one per line; the text
	// output only.
	Details []string `json:"-"`
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

// StatusInfo says which status document an answer read.
type StatusInfo struct {
	// ConfigMap is NAMESPACE/NAME.
	ConfigMap string `json:"configMap"`
	// Time is when the autoscaler wrote it (its loop's time).
	Time string `json:"time"`
}

// status reads and parses the autoscaler's status ConfigMap.
func (e *Explainer) status(ctx context.Context) (*status.Document, error) {
	ns, name := e.o.AutoscalerNamespace, e.o.StatusConfigMap
	cm, err := e.o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("status ConfigMap %s/%s not found: is the autoscaler running in namespace %s with --write-status-configmap=true? (--autoscaler-namespace and --status-config-map-name say where to look)", ns, name, ns)
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
	if !status.WrittenByGpuscale(text) {
		return nil, fmt.Errorf("status ConfigMap %s/%s was not written by gpuscale: it has no safeToAutoscale field%s. "+
			"The upstream Cluster Autoscaler writes a status of the same name: if it runs, or ran last, this is its status, not gpuscale's; "+
			"is gpuscale running with --write-status-configmap=true, and is the upstream autoscaler stopped?", ns, name, foreignStatusSummary(d))
	}
	return d, nil
}

func (e *Explainer) statusInfo(d *status.Document) StatusInfo {
	return StatusInfo{ConfigMap: e.o.AutoscalerNamespace + "/" + e.o.StatusConfigMap, Time: d.Time}
}

// statusAge says when the status was written, for the reader to judge.
func (e *Explainer) statusAge(s *status.Document) string {
	t, err := s.DocTime()
	if err != nil {
		return "at " + s.Time
	}
	return fmt.Sprintf("at %s (%s ago)", s.Time, e.o.Clock.Since(t).Round(time.Second))
}

// ago says how long ago t was.
func (e *Explainer) ago(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return e.o.Clock.Since(t).Round(time.Second).String() + " ago"
}

// at writes a time and how long ago (or from now) it is.
func (e *Explainer) at(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	d := e.o.Clock.Since(t).Round(time.Second)
	when := d.String() + " ago"
	if d < 0 {
		when = "in " + (-d).String()
	}
	return t.UTC().Format(time.RFC3339) + " (" + when + ")"
}

func notFound(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found", kind, name)
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}

// foreignStatusSummary names what a status not written by gpuscale says
// of itself: " (autoscalerStatus Running, written 2026-11-26T10:00:00Z)".
func foreignStatusSummary(d *status.Document) string {
	var parts []string
	if d.AutoscalerStatus != "" {
		parts = append(parts, "autoscalerStatus "+d.AutoscalerStatus)
	}
	if d.Time != "" {
		parts = append(parts, "written "+d.Time)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
