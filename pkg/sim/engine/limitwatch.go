package engine

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// LimitHit is a limit that held capacity back: reached while pods that a
// group so limited could run were waiting.
type LimitHit struct {
	// Limit names it: "node group G max size N", "--max-nodes-total",
	// "--cores-total", "--memory-total" or "--gpu-total TYPE".
	Limit string
	// First is when it first held pods back; For is how long it did in all.
	First, For time.Duration
}

// limitWatch finds, whenever the cluster changes, which limits hold back a
// waiting pod, and adds up how long each does.
type limitWatch struct {
	checked  bool
	changed  uint64 // the engine's change count when last found
	binding  []string
	hits     map[string]*LimitHit
	per      []limits.Totals // of each group's template node
	template []*snapshot.NodeInfo
	checker  []*predicates.Checker
	fits     map[fitKey]bool
}

type fitKey struct {
	workload string
	group    int
}

// watchLimits charges dt to the limits binding over the interval that ends
// now, the cluster being as it is since the last change.
func (e *Engine) watchLimits(dt time.Duration) {
	w := &e.rec.limits
	if !w.checked || w.changed != e.pace.changed {
		w.checked, w.changed = true, e.pace.changed
		w.binding = e.bindingLimits()
	}
	for _, name := range w.binding {
		if w.hits == nil {
			w.hits = map[string]*LimitHit{}
		}
		h := w.hits[name]
		if h == nil {
			h = &LimitHit{Limit: name, First: e.rec.last}
			w.hits[name] = h
		}
		h.For += dt
	}
}

// bindingLimits lists the limits that hold a waiting pod back: the pod fits
// an empty node of some group that cannot grow (its max size, or a cluster
// maximum given what every group is billed for) and of no group that can.
// A group with nodes still coming (asked for, or registered without their
// GPUs) is not held back yet: those nodes may be for the pod.
func (e *Engine) bindingLimits() []string {
	if len(e.work.pending) == 0 {
		return nil
	}
	w := &e.rec.limits
	if w.per == nil {
		e.initLimitWatch()
	}
	lim := e.opts.Autoscaler.Limits
	var totals limits.Totals
	for i, g := range e.cloud.groups {
		totals.Add(w.per[i], g.target)
	}
	why := make([]string, len(e.cloud.groups)) // "" for a group that can grow
	held := false
	for i, g := range e.cloud.groups {
		switch n, which := lim.Headroom(totals, w.per[i]); {
		case g.target >= g.cfg.MaxSize:
			why[i] = fmt.Sprintf("node group %s max size %d", g.cfg.Name, g.cfg.MaxSize)
		case n == 0:
			why[i] = "--" + which
		}
		held = held || why[i] != ""
	}
	if !held {
		return nil
	}
	e.clearComing(why)
	var out []string
	seen := map[string]bool{}
	for _, p := range e.work.pending {
		if seen[p.w.key] {
			continue
		}
		seen[p.w.key] = true
		var limitsHit []string
		open := false
		for i := range e.cloud.groups {
			if !e.fitsTemplate(p, i) {
				continue
			}
			if why[i] == "" {
				open = true
				break
			}
			limitsHit = append(limitsHit, why[i])
		}
		if open {
			continue
		}
		for _, h := range limitsHit {
			if !contains(out, h) {
				out = append(out, h)
			}
		}
	}
	sort.Strings(out)
	return out
}

// clearComing marks as able to grow the groups with nodes still coming.
func (e *Engine) clearComing(why []string) {
	for i, g := range e.cloud.groups {
		for _, c := range g.inFlight {
			if !c.canceled {
				why[i] = ""
			}
		}
	}
	for _, ni := range e.snap.Nodes() {
		if g := e.cloud.byID[ni.Group]; g != nil && g.gpus > 0 && gpu.Allocatable(ni.Node) == 0 {
			for i := range e.cloud.groups {
				if e.cloud.groups[i] == g {
					why[i] = ""
				}
			}
		}
	}
}

func (e *Engine) initLimitWatch() {
	w := &e.rec.limits
	w.fits = map[fitKey]bool{}
	for _, g := range e.cloud.groups {
		w.per = append(w.per, limits.NodeTotals(g.template))
		s := snapshot.New()
		n := g.template.DeepCopy()
		n.Name = "template-" + g.cfg.Name
		var ni *snapshot.NodeInfo
		if err := s.AddNode(n); err == nil {
			ni = s.Node(n.Name)
		}
		w.template = append(w.template, ni)
		w.checker = append(w.checker, predicates.New(s))
	}
}

// fitsTemplate tells whether pods of p's workload fit an empty node of
// group i (pods of one workload are alike); remembered per workload.
func (e *Engine) fitsTemplate(p *simPod, i int) bool {
	w := &e.rec.limits
	k := fitKey{p.w.key, i}
	if v, ok := w.fits[k]; ok {
		return v
	}
	v := w.template[i] != nil && w.checker[i].PreparePodInfo(p.pi).CheckNodeLocal(w.template[i]).Fits()
	w.fits[k] = v
	return v
}

// result lists the limits reached, first reached first.
func (w *limitWatch) result() []LimitHit {
	out := make([]LimitHit, 0, len(w.hits))
	for _, h := range w.hits {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].First != out[j].First {
			return out[i].First < out[j].First
		}
		return out[i].Limit < out[j].Limit
	})
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
