// Package bound computes a lower bound on what any autoscaling policy must
// pay for a demand over time: at every instant the demanded cpu, memory and
// GPUs are packed fractionally onto the cheapest mix of node shapes (a
// linear program), and the cheapest rate is integrated over time. Real
// nodes come whole, pods cannot be split across nodes and new nodes take
// time to arrive, so every real policy pays at least this much.
//
// The linear program is solved through its dual, whose feasible region does
// not depend on the demand: its vertices are found once, and the cost rate
// at any demand D is the largest y·D over them.
//
// ComputePods is the tighter bound for pods of known classes: each pod
// whole on one node of a shape it may run on and fits in (see pods.go).
package bound

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Amount is an amount of the three packed resources.
type Amount struct {
	CPU       float64 // cores
	MemoryGiB float64
	GPUs      float64
}

// Scale multiplies every resource by k.
func (a Amount) Scale(k float64) Amount { return Amount{a.CPU * k, a.MemoryGiB * k, a.GPUs * k} }

func (a Amount) vec() [3]float64 { return [3]float64{a.CPU, a.MemoryGiB, a.GPUs} }

// Shape is a node shape one may buy by the hour.
type Shape struct {
	Name         string
	PricePerHour float64
	Capacity     Amount
}

// Change is a change of demand at a point of time.
type Change struct {
	At    time.Duration
	Delta Amount
}

// Result is the bound over a period.
type Result struct {
	// Cost is the lowest possible cost in dollars.
	Cost float64
	// GPUHours is the integral of demanded GPUs.
	GPUHours float64
	// Unserved lists resources demanded that no shape offers (Compute), or
	// the classes of pods with no shape to run on (ComputePods); their
	// demand is left out of Cost and GPUHours.
	Unserved []string
}

const eps = 1e-9

// Compute integrates the cheapest cost rate of the demand from 0 to end.
func Compute(shapes []Shape, changes []Change, end time.Duration) (Result, error) {
	var res Result
	offered := [3]bool{}
	for _, s := range shapes {
		if s.PricePerHour < 0 {
			return res, fmt.Errorf("shape %s: price must not be negative, got %g", s.Name, s.PricePerHour)
		}
		for i, v := range s.Capacity.vec() {
			if v > eps {
				offered[i] = true
			}
		}
	}
	vertices := dualVertices(undominated(shapes), offered)
	sorted := append([]Change(nil), changes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At < sorted[j].At })
	var demand [3]float64
	var last time.Duration
	unserved := [3]bool{}
	flush := func(to time.Duration) {
		if to > end {
			to = end
		}
		if to <= last {
			return
		}
		hours := (to - last).Hours()
		d := demand
		for i := range d {
			if d[i] < eps {
				d[i] = 0
			}
			if !offered[i] && d[i] > 0 {
				unserved[i] = true
				d[i] = 0
			}
		}
		res.Cost += rate(vertices, d) * hours
		res.GPUHours += d[2] * hours
		last = to
	}
	for _, c := range sorted {
		flush(c.At)
		v := c.Delta.vec()
		for i := range demand {
			demand[i] += v[i]
		}
	}
	flush(end)
	for i, name := range []string{"cpu", "memory", "GPUs"} {
		if unserved[i] {
			res.Unserved = append(res.Unserved, name)
		}
	}
	return res, nil
}

// undominated leaves out the shapes that can never be part of the cheapest
// fleet: a shape that gives, for each resource, no more per dollar than
// another shape gives. Its constraint in the dual (cap_s·y <= price_s) is
// then implied by the other's for every y >= 0, so the dual's vertices,
// and the bound, are the same without it. Of shapes alike per dollar, the
// first is kept. Free shapes are all kept. The vertex enumeration is
// cubic in the shapes left, and clusters of hundreds of groups have few
// instance types: this keeps the bound to seconds there.
func undominated(shapes []Shape) []Shape {
	perDollar := make([][3]float64, len(shapes))
	for i, s := range shapes {
		if s.PricePerHour > 0 {
			perDollar[i] = s.Capacity.Scale(1 / s.PricePerHour).vec()
		}
	}
	dominates := func(t, s int) bool { // t gives at least as much as s of everything per dollar
		for r := 0; r < 3; r++ {
			if perDollar[t][r] < perDollar[s][r]*(1-1e-12) {
				return false
			}
		}
		return true
	}
	out := make([]Shape, 0, len(shapes))
	for s := range shapes {
		kept := true
		if shapes[s].PricePerHour > 0 {
			for t := range shapes {
				if t == s || shapes[t].PricePerHour <= 0 || !dominates(t, s) {
					continue
				}
				// Alike shapes dominate each other: keep the first.
				if !dominates(s, t) || t < s {
					kept = false
					break
				}
			}
		}
		if kept {
			out = append(out, shapes[s])
		}
	}
	return out
}

// rate is the cheapest cost per hour of demand d: max over dual vertices.
func rate(vertices [][3]float64, d [3]float64) float64 {
	best := 0.0
	for _, y := range vertices {
		best = math.Max(best, y[0]*d[0]+y[1]*d[1]+y[2]*d[2])
	}
	return best
}

// dualVertices enumerates the vertices of {y >= 0 : y·cap_s <= price_s for
// every shape}, with y fixed at 0 for resources no shape offers (the
// region is then bounded).
func dualVertices(shapes []Shape, offered [3]bool) [][3]float64 {
	type row struct {
		a [3]float64
		b float64
	}
	var rows []row
	for _, s := range shapes {
		rows = append(rows, row{s.Capacity.vec(), s.PricePerHour})
	}
	for i := 0; i < 3; i++ {
		var a [3]float64
		a[i] = 1
		rows = append(rows, row{a, 0})
	}
	feasible := func(y [3]float64) bool {
		for i := 0; i < 3; i++ {
			if y[i] < -eps || (!offered[i] && y[i] > eps) {
				return false
			}
		}
		for _, s := range shapes {
			c := s.Capacity.vec()
			if c[0]*y[0]+c[1]*y[1]+c[2]*y[2] > s.PricePerHour+1e-7 {
				return false
			}
		}
		return true
	}
	var out [][3]float64
	n := len(rows)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for k := j + 1; k < n; k++ {
				y, ok := solve3([3][3]float64{rows[i].a, rows[j].a, rows[k].a}, [3]float64{rows[i].b, rows[j].b, rows[k].b})
				if ok && feasible(y) {
					out = append(out, y)
				}
			}
		}
	}
	return out
}

// solve3 solves m·y = b by Cramer's rule; false when m is singular.
func solve3(m [3][3]float64, b [3]float64) ([3]float64, bool) {
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
			m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
			m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d := det(m)
	if math.Abs(d) < 1e-12 {
		return [3]float64{}, false
	}
	var y [3]float64
	for c := 0; c < 3; c++ {
		mc := m
		for r := 0; r < 3; r++ {
			mc[r][c] = b[r]
		}
		y[c] = det(mc) / d
	}
	return y, true
}
