package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer writes the walkthrough: headings, notes stamped with the time
// since the start, and the HPA table. It is safe for concurrent use: the
// watchers print as things happen.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	now   func() time.Time
}

func newPrinter(w io.Writer, now func() time.Time) *printer {
	if w == nil {
		w = io.Discard
	}
	return &printer{w: w, start: now(), now: now}
}

// heading starts a part of the walkthrough.
func (p *printer) heading(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\n==> %s\n", fmt.Sprintf(format, args...))
}

// note is one thing that happened, stamped with the elapsed time.
func (p *printer) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%s] %s\n", p.elapsed(), fmt.Sprintf(format, args...))
}

// block writes text as it is, indented.
func (p *printer) block(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(p.w, "    %s\n", line)
	}
}

// Write lets the tool builder's progress go through the printer.
func (p *printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.Write(b)
}

func (p *printer) elapsed() string {
	d := p.now().Sub(p.start).Round(time.Second)
	return fmt.Sprintf("%2d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// hpaColumns are `kubectl get hpa`'s columns, as the GPU guide shows them.
var hpaColumns = []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"}

// hpaRow is one line of the HPA table.
func hpaRow(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) []string {
	minPods := "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = fmt.Sprint(*h.Spec.MinReplicas)
	}
	age := "<unknown>"
	if !h.CreationTimestamp.IsZero() {
		age = duration.HumanDuration(now.Sub(h.CreationTimestamp.Time))
	}
	return []string{
		h.Name,
		h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name,
		hpaTargets(h),
		minPods,
		fmt.Sprint(h.Spec.MaxReplicas),
		fmt.Sprint(h.Status.CurrentReplicas),
		age,
	}
}

// hpaTargets writes current/target for each metric, "<unknown>" for a
// current value the HPA has not read.
func hpaTargets(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var parts []string
	for i, m := range h.Spec.Metrics {
		target, current := "<unset>", "<unknown>"
		switch m.Type {
		case autoscalingv2.PodsMetricSourceType:
			if m.Pods != nil && m.Pods.Target.AverageValue != nil {
				target = m.Pods.Target.AverageValue.String()
			}
			if i < len(h.Status.CurrentMetrics) {
				if cm := h.Status.CurrentMetrics[i].Pods; cm != nil && cm.Current.AverageValue != nil {
					current = cm.Current.AverageValue.String()
				}
			}
		case autoscalingv2.ExternalMetricSourceType:
			if m.External != nil && m.External.Target.AverageValue != nil {
				target = m.External.Target.AverageValue.String() + " (avg)"
			}
			if i < len(h.Status.CurrentMetrics) {
				if cm := h.Status.CurrentMetrics[i].External; cm != nil && cm.Current.AverageValue != nil {
					current = cm.Current.AverageValue.String()
					if cm.Current.AverageValue.Sign() < 0 {
						// An average over 0 replicas: the controller
						// divides by zero; the total is what it read.
						current = "(0 replicas)"
					}
				}
			}
		default:
			target = string(m.Type)
		}
		parts = append(parts, current+"/"+target)
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, ", ")
}

// hpaTable prints HPA rows one at a time, aligned as kubectl aligns a
// table: column widths are fixed by the header and the first row, with
// room for TARGETS to grow.
type hpaTable struct{ widths []int }

func newHPATable(first []string) *hpaTable {
	t := &hpaTable{widths: make([]int, len(hpaColumns))}
	for i, h := range hpaColumns {
		t.widths[i] = max(len(h), len(first[i]))
	}
	t.widths[2] = max(t.widths[2], len("<unknown>/30")) // TARGETS changes with the load
	return t
}

// line renders cols, three spaces between columns, none after the last.
func (t *hpaTable) line(cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i == len(cols)-1 {
			b.WriteString(c)
			break
		}
		fmt.Fprintf(&b, "%-*s   ", t.widths[i], c)
	}
	return b.String()
}

func (t *hpaTable) header() string { return t.line(hpaColumns) }
