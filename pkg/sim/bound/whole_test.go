package bound

import (
	"math"
	"testing"
	"time"
)

func TestWholeNodes(t *testing.T) {
	four := Shape{Name: "four", PricePerHour: 1, Capacity: Amount{CPU: 4, MemoryGiB: 16}}
	eight := Shape{Name: "eight", PricePerHour: 1.5, Capacity: Amount{CPU: 8, MemoryGiB: 16}}
	gpuNode := Shape{Name: "gpu", PricePerHour: 3, Capacity: Amount{CPU: 8, MemoryGiB: 32, GPUs: 1}}
	two := Shape{Name: "two", PricePerHour: 1, Capacity: Amount{CPU: 2, MemoryGiB: 8}}
	for _, c := range []struct {
		name              string
		shapes            []Shape
		classes           []Class
		changes           []PodChange
		whole, fractional float64
	}{{
		// One pod of 1 cpu: a quarter of a node fractionally, a node whole.
		name: "one small pod pays a node", shapes: []Shape{four},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 1}, Shapes: []int{0}}},
		changes: []PodChange{{0, 0, 1}}, whole: 1, fractional: 0.25,
	}, {
		// 10 cpu of 1-cpu pods: 8 + 4 cpu ($2.5) beats 2 x 8 and 3 x 4
		// ($3); fractionally 10/8 of the cheaper per core, $1.875.
		name: "the cheapest mix of whole nodes", shapes: []Shape{four, eight},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 1}, Shapes: []int{0, 1}}},
		changes: []PodChange{{0, 0, 10}}, whole: 2.5, fractional: 1.875,
	}, {
		// A GPU pod and a cpu pod that may not use the GPU node: two
		// components, a node each ($3 + $1). Fractionally the cpu pod
		// pays a quarter of a cpu node.
		name: "components do not share nodes", shapes: []Shape{four, gpuNode},
		classes: []Class{{Name: "gpu-pod", Pod: Amount{CPU: 1, GPUs: 1}, Shapes: []int{1}},
			{Name: "cpu-pod", Pod: Amount{CPU: 1}, Shapes: []int{0}}},
		changes: []PodChange{{0, 0, 1}, {0, 1, 1}}, whole: 4, fractional: 3.25,
	}, {
		// 65 pods of 1 cpu on 2-cpu nodes: past maxWholePods the search is
		// not made and the fractional 32.5 stands (whole would be 33).
		name: "many pods keep the fractional bound", shapes: []Shape{two},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 1}, Shapes: []int{0}}},
		changes: []PodChange{{0, 0, maxWholePods + 1}}, whole: 32.5, fractional: 32.5,
	}} {
		t.Run(c.name, func(t *testing.T) {
			for _, fractional := range []bool{false, true} {
				got, err := ComputePods(c.shapes, c.classes, c.changes, time.Hour, PodOptions{Solves: -1, Fractional: fractional})
				if err != nil {
					t.Fatal(err)
				}
				want := c.whole
				if fractional {
					want = c.fractional
				}
				if math.Abs(got.Cost-want) > 1e-9 {
					t.Errorf("fractional %v: cost %.6f, want %.6f", fractional, got.Cost, want)
				}
			}
		})
	}
}

// TestWholeCoverMatchesEnumeration checks the search against trying every
// count of every shape on small demands.
func TestWholeCoverMatchesEnumeration(t *testing.T) {
	shapes := []Shape{
		{Name: "a", PricePerHour: 1, Capacity: Amount{CPU: 4, MemoryGiB: 8}},
		{Name: "b", PricePerHour: 1.7, Capacity: Amount{CPU: 8, MemoryGiB: 8}},
		{Name: "c", PricePerHour: 2.9, Capacity: Amount{CPU: 8, MemoryGiB: 32, GPUs: 2}},
		{Name: "d", PricePerHour: 1.2, Capacity: Amount{CPU: 2, MemoryGiB: 24}},
	}
	elig := [][]int{{0, 1, 2, 3}}
	comps, _ := components(shapes, elig)
	for _, d := range [][3]float64{{3, 3, 0}, {9, 9, 0}, {13, 40, 1}, {20, 70, 3}, {1, 50, 0}, {16, 16, 4}} {
		got, ok := comps[0].cover(shapes, d)
		if !ok {
			t.Fatalf("%v: search cut short", d)
		}
		want := math.Inf(1)
		for a := 0; a <= 20; a++ {
			for b := 0; b <= 20; b++ {
				for c := 0; c <= 10; c++ {
					for e := 0; e <= 20; e++ {
						n := [4]int{a, b, c, e}
						var sum [3]float64
						cost := 0.0
						for i, s := range shapes {
							v := s.Capacity.vec()
							for r := range sum {
								sum[r] += float64(n[i]) * v[r]
							}
							cost += float64(n[i]) * s.PricePerHour
						}
						if sum[0] >= d[0] && sum[1] >= d[1] && sum[2] >= d[2] {
							want = min(want, cost)
						}
					}
				}
			}
		}
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("demand %v: cover %.4f, enumeration %.4f", d, got, want)
		}
	}
}
