// Package pending decides which pods not yet on a node the autoscaler acts
// for, by the scheduler that owns them: pods of kube-scheduler once it has
// marked them unschedulable (PodScheduled=False, reason Unschedulable);
// pods of the schedulers named in --bypassed-scheduler-names as soon as
// they wait for a node, marked or not (upstream's semantics: batch and
// gang schedulers such as KAI, Volcano or YuniKorn may never mark a pod
// the way kube-scheduler does, or only late); and no pod of any other
// scheduler, whose placement rules the simulation cannot know. Those are
// counted per scheduler, so the status can say who was left alone and why.
// Both shells select with the same rules; the package is pure.
package pending

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// Options are the selection's flags.
type Options struct {
	// BypassedSchedulers are the scheduler names whose pods count as
	// pending as soon as they wait for a node, without the Unschedulable
	// mark (--bypassed-scheduler-names). Naming default-scheduler bypasses
	// kube-scheduler's mark too.
	BypassedSchedulers []string
}

// Validate names a bad scheduler name.
func (o Options) Validate() error {
	for _, s := range o.BypassedSchedulers {
		if s == "" {
			return fmt.Errorf("--bypassed-scheduler-names: a scheduler name must not be empty, got %q", o.BypassedSchedulers)
		}
	}
	return nil
}

// Verdict is what the selection makes of one pod.
type Verdict int

// Verdicts.
const (
	// NotPending: bound, terminal, being deleted, or not yet judged by
	// kube-scheduler.
	NotPending Verdict = iota
	// Unschedulable: its scheduler marked it unschedulable.
	Unschedulable
	// Unprocessed: a bypassed scheduler's pod that waits for a node and is
	// not marked (yet).
	Unprocessed
	// OtherScheduler: a pod of a scheduler neither the default one nor
	// bypassed; it is left alone.
	OtherScheduler
)

// Pending reports whether the verdict makes the pod pending.
func (v Verdict) Pending() bool { return v == Unschedulable || v == Unprocessed }

// Classify judges one pod.
func Classify(p *v1.Pod, o Options) Verdict {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil ||
		p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return NotPending
	}
	name := SchedulerOf(p)
	bypassed := o.bypassed(name)
	if name != v1.DefaultSchedulerName && !bypassed {
		return OtherScheduler
	}
	cond := scheduledCondition(p)
	switch {
	case cond != nil && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable:
		return Unschedulable
	case bypassed && (cond == nil || (cond.Status == v1.ConditionFalse && cond.Reason == "")):
		// Not tried yet, or tried without a verdict; a SchedulerError or
		// any other reason is the scheduler's own business.
		return Unprocessed
	}
	return NotPending
}

// SchedulerOf is the pod's scheduler name; the API server defaults an
// empty one to default-scheduler.
func SchedulerOf(p *v1.Pod) string {
	if p.Spec.SchedulerName == "" {
		return v1.DefaultSchedulerName
	}
	return p.Spec.SchedulerName
}

func (o Options) bypassed(name string) bool {
	for _, s := range o.BypassedSchedulers {
		if s == name {
			return true
		}
	}
	return false
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Selection is what the selection kept and what it left alone.
type Selection struct {
	// Pods are the pending pods, in input order.
	Pods []*v1.Pod
	// Unprocessed counts the Pods taken before their scheduler marked
	// them (bypassed schedulers).
	Unprocessed int
	// OtherSchedulers count the waiting pods left alone, per scheduler,
	// sorted by name.
	OtherSchedulers []SchedulerPods
}

// SchedulerPods counts one scheduler's pods.
type SchedulerPods struct {
	Scheduler string `json:"scheduler"`
	Pods      int    `json:"pods"`
}

// Counter builds a Selection one pod at a time (the live shell meets pods
// as it mirrors them).
type Counter struct {
	opts   Options
	sel    Selection
	others map[string]int
}

// NewCounter starts an empty selection.
func NewCounter(o Options) *Counter { return &Counter{opts: o} }

// Add judges a pod and keeps or counts it; it returns the verdict.
func (c *Counter) Add(p *v1.Pod) Verdict {
	v := Classify(p, c.opts)
	switch v {
	case Unschedulable:
		c.sel.Pods = append(c.sel.Pods, p)
	case Unprocessed:
		c.sel.Pods = append(c.sel.Pods, p)
		c.sel.Unprocessed++
	case OtherScheduler:
		if c.others == nil {
			c.others = map[string]int{}
		}
		c.others[SchedulerOf(p)]++
	}
	return v
}

// Selection returns what was kept and counted.
func (c *Counter) Selection() Selection {
	s := c.sel
	s.OtherSchedulers = make([]SchedulerPods, 0, len(c.others))
	for name, n := range c.others {
		s.OtherSchedulers = append(s.OtherSchedulers, SchedulerPods{Scheduler: name, Pods: n})
	}
	sort.Slice(s.OtherSchedulers, func(i, j int) bool { return s.OtherSchedulers[i].Scheduler < s.OtherSchedulers[j].Scheduler })
	if len(s.OtherSchedulers) == 0 {
		s.OtherSchedulers = nil
	}
	return s
}

// SelectTried keeps the pods of default-scheduler and of bypassed
// schedulers among pods the caller's scheduler already tried and could not
// place (the simulator's), and counts the others.
func SelectTried(pods []*v1.Pod, o Options) Selection {
	c := NewCounter(o)
	for _, p := range pods {
		if name := SchedulerOf(p); name == v1.DefaultSchedulerName || o.bypassed(name) {
			c.sel.Pods = append(c.sel.Pods, p)
			continue
		}
		if c.others == nil {
			c.others = map[string]int{}
		}
		c.others[SchedulerOf(p)]++
	}
	return c.Selection()
}

// Select judges every pod.
func Select(pods []*v1.Pod, o Options) Selection {
	c := NewCounter(o)
	for _, p := range pods {
		c.Add(p)
	}
	return c.Selection()
}
