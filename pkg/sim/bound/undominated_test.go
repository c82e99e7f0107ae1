package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Leaving dominated shapes out changes no bound: random fleets of shapes,
// many of them alike or dominated, random demand over time.
func TestUndominatedShapesGiveTheSameBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		var shapes []Shape
		for i := range 2 + rng.IntN(12) {
			shapes = append(shapes, Shape{Name: fmt.Sprint(i), PricePerHour: float64(rng.IntN(5)),
				Capacity: Amount{CPU: float64(rng.IntN(4) * 4), MemoryGiB: float64(rng.IntN(3) * 16), GPUs: float64(rng.IntN(3))}})
		}
		var changes []Change
		for i := range 1 + rng.IntN(6) {
			changes = append(changes, Change{At: time.Duration(i) * time.Hour,
				Delta: Amount{CPU: rng.Float64() * 10, MemoryGiB: rng.Float64() * 40, GPUs: float64(rng.IntN(3))}})
		}
		got, err := Compute(shapes, changes, 8*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		offered := [3]bool{}
		for _, s := range shapes {
			for i, v := range s.Capacity.vec() {
				offered[i] = offered[i] || v > eps
			}
		}
		all := dualVertices(shapes, offered)
		want := 0.0
		var demand [3]float64
		for i, c := range changes {
			v := c.Delta.vec()
			for r := range demand {
				demand[r] += v[r]
				if !offered[r] {
					demand[r] = 0
				}
			}
			next := 8 * time.Hour
			if i+1 < len(changes) {
				next = changes[i+1].At
			}
			want += rate(all, demand) * (next - c.At).Hours()
		}
		if math.Abs(got.Cost-want) > 1e-6*math.Max(1, want) {
			t.Fatalf("trial %d: bound %g with dominated shapes left out, %g with all: %+v", trial, got.Cost, want, shapes)
		}
	}
}

// A thousand node groups of a few instance types (zones, spot and
// on-demand copies) leave only their kinds to the vertex enumeration,
// which is cubic in the shapes it is given.
func TestManyGroupsOfFewTypesLeaveTheirKinds(t *testing.T) {
	var shapes []Shape
	types := []Shape{{PricePerHour: 3.06, Capacity: Amount{CPU: 8, MemoryGiB: 61, GPUs: 1}},
		{PricePerHour: 24.5, Capacity: Amount{CPU: 96, MemoryGiB: 768, GPUs: 8}},
		{PricePerHour: 0.77, Capacity: Amount{CPU: 16, MemoryGiB: 64}},
		{PricePerHour: 1.54, Capacity: Amount{CPU: 32, MemoryGiB: 128}}}
	for i := range 1000 {
		s := types[i%len(types)]
		s.Name = fmt.Sprint(i)
		if i%8 >= 4 {
			s.PricePerHour *= 0.35 // spot
		}
		shapes = append(shapes, s)
	}
	if n := len(undominated(shapes)); n > 8 {
		t.Errorf("%d shapes left of 1000 copies of 8 kinds", n)
	}
}

// Shapes beaten outright (dearer copies, smaller copies, copies fewer
// classes may use) change no per-pod bound, whole or fractional.
func TestBeatenShapesChangeNoPodBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 60 {
		var shapes []Shape
		for i := range 2 + rng.IntN(5) {
			shapes = append(shapes, Shape{Name: fmt.Sprint(i), PricePerHour: 1 + float64(rng.IntN(8)),
				Capacity: Amount{CPU: float64(4 + rng.IntN(4)*4), MemoryGiB: float64(16 + rng.IntN(3)*16), GPUs: float64(rng.IntN(3))}})
		}
		n := len(shapes)
		var classes []Class
		for c := range 1 + rng.IntN(3) {
			cl := Class{Name: fmt.Sprint("c", c), Pod: Amount{CPU: float64(1 + rng.IntN(3)), MemoryGiB: float64(1 + rng.IntN(8)), GPUs: float64(rng.IntN(2))}}
			for s := range n {
				if rng.IntN(4) > 0 {
					cl.Shapes = append(cl.Shapes, s)
				}
			}
			classes = append(classes, cl)
		}
		var changes []PodChange
		for i := range 1 + rng.IntN(5) {
			changes = append(changes, PodChange{At: time.Duration(i) * time.Hour, Class: rng.IntN(len(classes)), Delta: 1 + rng.IntN(4)})
		}
		base, err := ComputePods(shapes, classes, changes, 6*time.Hour, PodOptions{Solves: -1})
		if err != nil {
			t.Fatal(err)
		}
		// Beaten copies: dearer, or smaller, and open to the same classes
		// or fewer.
		more := append([]Shape(nil), shapes...)
		moreClasses := make([]Class, len(classes))
		copy(moreClasses, classes)
		for s := range n {
			c := shapes[s]
			c.Name += "-copy"
			c.PricePerHour += float64(rng.IntN(2))
			c.Capacity.CPU -= float64(rng.IntN(2))
			more = append(more, c)
			for k := range moreClasses {
				if containsInt(classes[k].Shapes, s) && rng.IntN(3) > 0 {
					moreClasses[k].Shapes = append(append([]int(nil), moreClasses[k].Shapes...), len(more)-1)
				}
			}
		}
		got, err := ComputePods(more, moreClasses, changes, 6*time.Hour, PodOptions{Solves: -1})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Cost-base.Cost) > 1e-6*math.Max(1, base.Cost) {
			t.Fatalf("trial %d: bound %g with beaten copies, %g without", trial, got.Cost, base.Cost)
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
